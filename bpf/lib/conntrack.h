/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Connection tracking for FullNAT. Each connection has two entries in the
 * shared LRU map of its family:
 *   forward {client, vip, cport, vport}  -> real, local IP and local port
 *   reverse {real, laddr, rport, lport}  -> client address and port
 * so that both directions are one lookup. Each entry keeps the TCP state
 * its own direction has seen and expires after that state's timeout; an
 * expired entry is treated as absent.
 *
 * Local ports come from this CPU's slice of the configured range, per local
 * IP, so CPUs never hand out the same port. A port is taken only when no
 * reverse entry holds {real, laddr, rport, lport}, counting an entry as
 * holding it for XLB_CT_HOLD_PERIOD past its timeout: the forward entry
 * refreshes the reverse one at least that often, so no two live
 * connections ever share that tuple.
 */
#ifndef XLB_CONNTRACK_H
#define XLB_CONNTRACK_H

#include "maps.h"
#include "parse.h"

/* A key of either connection map. */
union ct_key {
	struct ct4_key v4;
	struct ct6_key v6;
};

static __always_inline __u32 ct_now(void)
{
	return bpf_ktime_get_coarse_ns() / NSEC_PER_SEC;
}

/* ct_key_set builds the key of a packet src:sport -> dst:dport. */
static __always_inline void ct_key_set(union ct_key *k, __u8 family,
				       const struct xlb_addr *src,
				       const struct xlb_addr *dst, __be16 sport,
				       __be16 dport, __u8 proto)
{
	__builtin_memset(k, 0, sizeof(*k));
	if (family == XLB_AF_INET) {
		k->v4.src = src->w[0];
		k->v4.dst = dst->w[0];
		k->v4.sport = sport;
		k->v4.dport = dport;
		k->v4.proto = proto;
		return;
	}
	__builtin_memcpy(k->v6.src, src->w, sizeof(k->v6.src));
	__builtin_memcpy(k->v6.dst, dst->w, sizeof(k->v6.dst));
	k->v6.sport = sport;
	k->v6.dport = dport;
	k->v6.proto = proto;
}

/* ct_lookup returns the entry of key k; IPv6 entries begin with the same
 * struct ct_entry, the IPv6 address follows it.
 *
 * Functions that take "const __u8 family" must be called with a constant:
 * the entry points specialise the whole path per family, so the verifier
 * never sees an IPv4 entry read as an IPv6 one. */
static __always_inline struct ct_entry *ct_lookup(const union ct_key *k,
						  __u8 family)
{
	if (family == XLB_AF_INET)
		return bpf_map_lookup_elem(&ct4, &k->v4);
	return bpf_map_lookup_elem(&ct6, &k->v6);
}

/* ct_store writes an entry; flags BPF_ANY or BPF_NOEXIST. */
static __always_inline long ct_store(const union ct_key *k, __u8 family,
				     const struct ct6_entry *e, __u64 flags)
{
	if (family == XLB_AF_INET)
		return bpf_map_update_elem(&ct4, &k->v4, &e->ct, flags);
	return bpf_map_update_elem(&ct6, &k->v6, e, flags);
}

/* ct_addr reads the address an entry stores (local IP or client). */
static __always_inline void ct_addr(const struct ct_entry *e, __u8 family,
				    struct xlb_addr *addr)
{
	if (family == XLB_AF_INET) {
		__builtin_memset(addr, 0, sizeof(*addr));
		addr->w[0] = e->addr4;
		return;
	}
	__builtin_memcpy(addr->w, ((const struct ct6_entry *)e)->addr6,
			 sizeof(addr->w));
}

/* ct_entry_set fills a new entry; e->ct.addr4 or e->addr6 by family. */
static __always_inline void ct_entry_set(struct ct6_entry *e, __u8 family,
					 const struct xlb_addr *addr,
					 __be16 port, __u8 state, __u8 flags,
					 __u32 svc_id, __u32 real_id, __u32 now)
{
	__builtin_memset(e, 0, sizeof(*e));
	e->ct.last_seen = now;
	e->ct.state = state;
	e->ct.flags = flags;
	e->ct.svc_id = svc_id;
	e->ct.real_id = real_id;
	e->ct.port = port;
	if (family == XLB_AF_INET)
		e->ct.addr4 = addr->w[0];
	else
		__builtin_memcpy(e->addr6, addr->w, sizeof(e->addr6));
}

/* ct_expired_after tells whether an entry has been idle longer than its
 * state's timeout plus grace seconds. */
static __always_inline bool ct_expired_after(const struct ct_entry *e,
					     __u32 now, __u32 grace)
{
	__u32 state = e->state;

	if (state >= CT_STATE_MAX)
		return true;
	return now - e->last_seen > xlb_cfg.timeouts[state] + grace;
}

static __always_inline bool ct_expired(const struct ct_entry *e, __u32 now)
{
	return ct_expired_after(e, now, 0);
}

/* ct_count_reply_miss counts a packet that found no entry although it
 * is the reply of one of ours: to a local IP (not also a VIP), at a port
 * of the local port range. Its connection's entries were evicted, flushed
 * or never there (docs/datapath.md); an expired entry is not a miss. */
static __always_inline void
ct_count_reply_miss(const struct pkt *pkt, __u32 dst_flags, const __u8 family)
{
	__u16 port = bpf_ntohs(pkt->tuple.dport);

	if (pkt->ct_miss &&
	    (dst_flags & (XLB_ADDR_VIP | XLB_ADDR_LADDR)) == XLB_ADDR_LADDR &&
	    port >= xlb_cfg.lport_min && port <= xlb_cfg.lport_max)
		count_ct(family, CT_STAT_MISS_REPLY);
}

/* ct_hold_due tells whether a forward entry, seen last at last_seen, is
 * to refresh its reverse entry: once per XLB_CT_HOLD_PERIOD. */
static __always_inline bool ct_hold_due(__u32 last_seen, __u32 now)
{
	return (last_seen / XLB_CT_HOLD_PERIOD) != (now / XLB_CT_HOLD_PERIOD);
}

/* ct_initial_state is the state of a connection's first packet: a UDP
 * datagram or a TCP SYN (new_connection lets nothing else in). */
static __always_inline __u8 ct_initial_state(const struct pkt *pkt)
{
	if (pkt->tuple.proto == IPPROTO_UDP)
		return CT_UDP;
	return CT_SYN_SENT;
}

/* ct_reopens tells a fresh SYN on an entry that is closing: the client
 * reuses the port for a new connection, which is scheduled anew. */
static __always_inline bool ct_reopens(const struct ct_entry *e,
				       const struct pkt *pkt)
{
	return pkt->tuple.proto == IPPROTO_TCP && e->state >= CT_FIN &&
	       (pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK)) == XLB_TCP_SYN;
}

/* ct_track moves an entry's TCP state on a packet of its direction and
 * refreshes its clock. Writes only what changed, so a busy flow does not
 * dirty the cache line on every packet. */
static __always_inline void ct_track(struct ct_entry *e, const struct pkt *pkt,
				     __u32 now)
{
	__u8 state = e->state;
	__u8 flags = pkt->tcp_flags;

	if (pkt->tuple.proto == IPPROTO_TCP) {
		if (flags & XLB_TCP_RST)
			state = CT_CLOSE;
		else if ((flags & XLB_TCP_FIN) && state != CT_CLOSE)
			state = CT_FIN;
		else if (state == CT_SYN_SENT && (flags & XLB_TCP_ACK))
			state = CT_ESTABLISHED;
	}
	if (state != e->state)
		e->state = state;
	if (e->last_seen != now)
		e->last_seen = now;
}

/* ct_hold_reverse keeps a forward entry's reverse entry alive as long as
 * the forward one lives (called when ct_hold_due). It returns false when
 * the reverse entry is gone or belongs to another connection, so that the
 * flow is scheduled anew rather than sharing a local port with someone
 * else. */
static __always_inline bool ct_hold_reverse(const struct pkt *pkt,
					    const struct ct_entry *fwd,
					    const struct xlb_addr *real,
					    __be16 rport, __u32 now,
					    const __u8 family)
{
	const struct xlb_tuple *t = &pkt->tuple;
	struct xlb_addr laddr, client;
	struct ct_entry *rev;
	union ct_key key;
	int i;

	ct_addr(fwd, family, &laddr);
	ct_key_set(&key, family, real, &laddr, rport, fwd->port, t->proto);
	rev = ct_lookup(&key, family);
	if (!rev || rev->port != t->sport)
		return false;
	ct_addr(rev, family, &client);
#pragma unroll
	for (i = 0; i < 4; i++)
		if (client.w[i] != t->src.w[i])
			return false;
	if (rev->last_seen < now)
		rev->last_seen = now;
	return true;
}

/* lport_alloc takes a free local port of laddr towards real:rport, stores
 * the reverse entry rev for it (key is scratch space) and returns the port
 * (network order), or 0 when every port probed is held by a live
 * connection. */
static __always_inline __be16 lport_alloc(__u32 laddr_id, __u8 family,
					  const struct xlb_addr *laddr,
					  const struct xlb_addr *real,
					  __be16 rport, __u8 proto,
					  const struct ct6_entry *rev,
					  __u32 now, union ct_key *key)
{
	__u32 ncpus = xlb_cfg.ncpus ? xlb_cfg.ncpus : 1;
	__u32 min = xlb_cfg.lport_min, max = xlb_cfg.lport_max;
	__u32 span, base, *cursor;
	int i;

	if (max < min)
		return 0;
	span = (max - min + 1) / ncpus;
	if (span == 0)
		return 0;
	base = min + (bpf_get_smp_processor_id() % ncpus) * span;
	cursor = bpf_map_lookup_elem(&lport_cursors, &laddr_id);
	if (!cursor)
		return 0;

	for (i = 0; i < XLB_LPORT_TRIES; i++) {
		__be16 port = bpf_htons(base + *cursor % span);
		struct ct_entry *held;

		*cursor = (*cursor + 1) % span;
		ct_key_set(key, family, real, laddr, rport, port, proto);
		/* a free port costs one update; a held one a lookup more */
		if (!ct_store(key, family, rev, BPF_NOEXIST)) {
			count_ct(family, CT_STAT_INSERTS);
			return port;
		}
		held = ct_lookup(key, family);
		if (held && !ct_expired_after(held, now, XLB_CT_HOLD_PERIOD))
			continue;
		/* replaces an expired entry: no insert (unless it was
		 * evicted since the first try, which goes uncounted) */
		if (ct_store(key, family, rev, BPF_ANY))
			return 0;
		return port;
	}
	return 0;
}

#endif /* XLB_CONNTRACK_H */
