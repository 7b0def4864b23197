/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Connection tracking for FullNAT. Each connection has two entries in the
 * table of its family (ct_table.h):
 *   forward {client, vip, cport, vport}  -> real, local IP and local port
 *   reverse {real, laddr, rport, lport}  -> client address and port
 * so that either direction is one probe. Each entry names the other's slot
 * (peer), keeps the TCP state its own direction has seen and expires after
 * that state's timeout; an expired entry is treated as absent.
 *
 * Local ports come from this CPU's slice of the configured range, per local
 * IP, so CPUs never hand out the same port. A port is taken only when the
 * home pair of its reverse key has a free slot and holds no entry of that
 * key, counting an entry as holding it for XLB_CT_HOLD_PERIOD past its
 * timeout: the forward entry refreshes the reverse one at least that often,
 * so no two live connections ever share {real, laddr, rport, lport}.
 */
#ifndef XLB_CONNTRACK_H
#define XLB_CONNTRACK_H

#include "ct_table.h"
#include "maps.h"
#include "parse.h"

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
		else if (state == CT_SYN_SENT && (flags & XLB_TCP_ACK) &&
			 !(e->flags & CT_F_SYNPROXY))
			/* a SYN-proxied one: when the real answers */
			state = CT_ESTABLISHED;
	}
	if (state != e->state)
		e->state = state;
	if (e->last_seen != now)
		e->last_seen = now;
}

/* ct_hold_reverse keeps a forward entry's reverse entry alive as long as
 * the forward one lives (called when ct_hold_due): the peer slot, read
 * directly. It returns false when the reverse entry is gone or belongs to
 * another connection, so that the flow is scheduled anew rather than
 * sharing a local port with someone else. */
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

	rev = ct_slot(fwd->peer, family);
	if (!rev || (rev->flags & (CT_F_USED | CT_F_BUSY | CT_F_REVERSE)) !=
			    (CT_F_USED | CT_F_REVERSE))
		return false;
	ct_addr(fwd, family, &laddr);
	ct_key_set(&key, family, real, &laddr, rport, fwd->port, t->proto);
	if (!ct_key_is(rev, &key, family) || rev->port != t->sport)
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

/* ct_release gives back a slot claimed for an entry that is not to be:
 * used (a probe may have to go past it) and expired. */
static __always_inline void ct_release(struct ct_entry *slot)
{
	__sync_lock_test_and_set((__u64 *)slot, ct_head_given_back());
}

#define LPORT_HELD -1 /* the pair holds the key: the port is taken */
#define LPORT_FULL -2 /* the pair has no free slot */

/* lport_pair_slot tells which slot of pair {home, home + 1} a reverse
 * entry of key may take: 0 or 1 (the first free one), or LPORT_HELD when
 * the pair holds key (live or within its hold), or LPORT_FULL. It writes
 * nothing, so the verifier's paths through the allocator's loop merge. */
static __always_inline int lport_pair_slot(const union ct_key *key, __u32 home,
					   __u32 now, __u8 family)
{
	struct ct_entry *s0 = ct_slot(home, family);
	struct ct_entry *s1 = ct_slot(home + 1, family);
	union ct_head h0, h1;
	bool free0, free1, key1;

	if (!s0 || !s1)
		return LPORT_FULL;
	h0.word = *(volatile __u64 *)s0;
	h1.word = *(volatile __u64 *)s1;
	free0 = ct_free(s0, &h0, home, now, family);
	if (!free0 && ct_key_is(s0, key, family))
		return LPORT_HELD;
	/* slot 1 is asked whether it is free (which may read its forward
	 * entry, elsewhere in the table) only when the answer matters */
	key1 = ct_key_is(s1, key, family);
	if (free0 && !key1)
		return 0;
	free1 = ct_free(s1, &h1, home + 1, now, family);
	if (!free1 && key1)
		return LPORT_HELD;
	if (free0)
		return 0;
	if (free1)
		return 1;
	return LPORT_FULL;
}

/* lport_take_half_open takes, in the full pair {home, home + 1}, the slot
 * of a reverse entry whose connection is half-open and stale (its forward
 * entry is ct_half_open_stale): the forward entry is given back first, so
 * that a connection whose client acknowledges at that moment keeps both,
 * then the reverse slot is claimed. Returns 0 or 1, the slot claimed, or
 * LPORT_FULL. */
static __always_inline int lport_take_half_open(__u32 home, __u32 now,
						__u8 family)
{
	int i;

#pragma unroll
	for (i = 0; i < 2; i++) {
		struct ct_entry *rev = ct_slot(home + i, family), *fwd;
		union ct_head rh, fh;

		if (!rev)
			return LPORT_FULL;
		rh.word = *(volatile __u64 *)rev;
		if ((rh.f.flags & (CT_F_USED | CT_F_BUSY | CT_F_REVERSE)) !=
		    (CT_F_USED | CT_F_REVERSE))
			continue;
		fwd = ct_slot(rev->peer, family);
		if (!fwd)
			continue;
		fh.word = *(volatile __u64 *)fwd;
		if (!ct_half_open_stale(&fh, now) || fwd->peer != home + i)
			continue;
		if (!ct_swap_head(fwd, fh.word, ct_head_given_back()))
			continue;
		if (ct_swap_head(rev, rh.word, ct_head_busy(now)))
			return i;
	}
	return LPORT_FULL;
}

/* A local port request: the connection's side towards the real in,
 * the reverse key, its claimed slot and the port out. */
struct lport_req {
	union ct_key key; /* out: the reverse key */
	struct xlb_addr laddr;
	struct xlb_addr real;
	__u32 laddr_id;
	__u32 slot; /* out: the claimed slot of the reverse entry */
	__be16 rport;
	__be16 port; /* out: the local port, 0 when none had room */
	__u8 proto;
	__u8 family;
	__u8 full;    /* out: some port was refused for a full pair */
	__u8 dropped; /* out: the slot was a half-open connection's */
};

_Static_assert(sizeof(struct lport_req) <=
		       sizeof(((struct ct_scratch *)0)->lport),
	       "ct_scratch has no room for a local port request");

/* xlb_lport_alloc takes a free local port of r->laddr towards
 * r->real:r->rport and claims the slot of its reverse entry. A port whose
 * pair is full gets the slot of a stale half-open connection there, if
 * any (r->dropped). r->port is 0 when no port probed had room. A global
 * function, as the probes are (ct_table.h). */
__noinline int xlb_lport_alloc(struct lport_req *r, __u32 now)
{
	__u32 ncpus = xlb_cfg.ncpus ? xlb_cfg.ncpus : 1;
	__u32 min = xlb_cfg.lport_min, max = xlb_cfg.lport_max;
	__u32 span, base, laddr_id, *cursor;
	int i;

	if (!r)
		return 0;
	r->port = 0;
	r->full = 0;
	r->dropped = 0;
	r->slot = CT_NO_SLOT;
	if (max < min)
		return 0;
	span = (max - min + 1) / ncpus;
	if (span == 0)
		return 0;
	base = min + (bpf_get_smp_processor_id() % ncpus) * span;
	laddr_id = r->laddr_id;
	cursor = bpf_map_lookup_elem(&lport_cursors, &laddr_id);
	if (!cursor)
		return 0;

	for (i = 0; i < XLB_LPORT_TRIES; i++) {
		__be16 p = bpf_htons(base + *cursor % span);
		struct ct_entry *s;
		__u32 home;
		int which;

		*cursor = (*cursor + 1) % span;
		ct_key_set(&r->key, r->family, &r->real, &r->laddr, r->rport, p,
			   r->proto);
		home = ct_home(&r->key, r->family);
		which = lport_pair_slot(&r->key, home, now, r->family);
		if (which == LPORT_FULL) {
			r->full = 1;
			which = lport_take_half_open(home, now, r->family);
			if (which >= 0) {
				r->dropped = 1;
				r->slot = home + which;
				r->port = p;
				return 0;
			}
		}
		if (which < 0)
			continue;
		s = ct_slot(home + which, r->family);
		if (!s || !ct_claim(s, home + which, now, false, r->family))
			continue;
		r->slot = home + which;
		r->port = p;
		return 0;
	}
	return 0;
}

#endif /* XLB_CONNTRACK_H */
