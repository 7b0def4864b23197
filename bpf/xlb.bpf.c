//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xlb: the XDP FullNAT load balancer. One packet's journey, top-down:
 *
 *   parse            lib/parse.h      Ethernet, IPv4/IPv6, TCP/UDP/ICMP
 *   ICMP errors      lib/icmp.h       translated when they quote a connection
 *   connection       lib/ct_table.h   one probe finds the forward or reverse
 *                                     entry; lib/conntrack.h: state timeouts
 *   new connection   lib/sched.h      service lookup, real from the table
 *                    lib/conntrack.h  local IP and port, both entries stored
 *   SYN proxy        lib/synproxy.h   cookies, the real's handshake, shifts
 *   client address   lib/client_addr.h TOA or PROXY v2: what to edit
 *   next hop         lib/fib.h        FIB lookup (cached), unresolved: drop
 *   too big          lib/pmtu.h       ICMP frag needed / packet too big
 *   rewrite          lib/nat.h        addresses, ports, TTL, checksums
 *   forward          lib/fib.h        redirect through tx_ports
 *   TCP edit         lib/tcp_edit.h   sequence shift, MSS, TOA/PROXY v2 bytes
 *   partial checksum lib/nat.h        summed whole once the verdict is known
 *
 * With workers, xlb_steer is what the interfaces run: it hands each flow
 * to a worker CPU, whose cpumap entry runs xlb_xdp (lib/steer.h).
 *
 * Every verdict leaves through xlb_xdp, which counts it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stdbool.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/consts.h"
#include "lib/xlb_shared.h"
#include "lib/maps.h"
#include "lib/stats.h"
#include "lib/parse.h"
#include "lib/csum.h"
#include "lib/csum_seg.h"
#include "lib/conntrack.h"
#include "lib/sched.h"
#include "lib/persist.h"
#include "lib/nat.h"
#include "lib/fib.h"
#include "lib/pmtu.h"
#include "lib/icmp.h"
#include "lib/tcp_edit.h"
#include "lib/client_addr.h"
#include "lib/synproxy.h"
#include "lib/synproxy_frames.h"
#include "lib/stages.h"
#include "lib/drop_sample.h"
#include "lib/ct_sync.h"
#include "lib/steer.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* send_rewritten finds the next hop of a packet about to become `to`,
 * answers it with an ICMP error if it is too big for that hop, else
 * rewrites and redirects it (a partial checksum is completed by
 * nat_finish, at the top). */
static __always_inline int send_rewritten(struct xdp_md *ctx, struct pkt *pkt,
					  const struct xlb_tuple *to,
					  __u32 real_slot)
{
	struct fib_cache_entry hop;
	int ret;

	ret = fib_nexthop(ctx, pkt, to, real_slot, &hop);
	if (ret >= 0)
		return ret;
	/* an edit's bytes (tcp_edit.h) count: the client is told the MTU
	 * without them */
	if (hop.mtu && pkt->ip_len + pkt->grow > hop.mtu) {
		pkt->mtu = hop.mtu - pkt->grow;
		return XLB_TOO_BIG;
	}
	ret = nat_rewrite(pkt, to);
	if (ret >= 0)
		return ret;
	return fib_redirect(pkt, &hop);
}

/* forward_to_real rewrites a client's packet to local IP:port -> real and
 * sends it. Returns XLB_CONTINUE when an established entry has lost its
 * reverse half and the flow must be scheduled anew. */
static __noinline int forward_to_real(struct xdp_md *ctx, struct pkt *pkt,
				      struct ct_entry *e, bool new_conn,
				      const __u8 family)
{
	__u32 now = pkt->now;
	struct xlb_tuple to = pkt->tuple;
	__u32 real_id = e->real_id;
	struct real *real;

	int ret;

	real = bpf_map_lookup_elem(&reals, &real_id);
	if (!real)
		return count_drop(DROP_NO_REAL);
	if (real->port)
		to.dport = real->port;
	ret = synproxy_forward(ctx, pkt, e, new_conn, family);
	if (ret >= 0)
		return ret;
	if (!new_conn && ct_hold_due(e->last_seen, now)) {
		if (!ct_hold_reverse(pkt, e, &real->addr, to.dport, now,
				     family))
			return XLB_CONTINUE;
		persist_refresh(e->svc_id, &pkt->tuple, real_id, now);
	}
	ct_track(e, pkt, now);
	client_addr_forward(pkt, e, family);

	to.dst = real->addr;
	ct_addr(e, family, &to.src);
	to.sport = e->port;
	count_traffic(e->svc_id, real_id, pkt->len, false, new_conn);
	return send_rewritten(ctx, pkt, &to, real_id + 1);
}

/* reply_to_client rewrites a real's reply to VIP:vport -> client. */
static __noinline int reply_to_client(struct xdp_md *ctx, struct pkt *pkt,
				      struct ct_entry *e, const __u8 family)
{
	__u32 now = pkt->now;
	struct xlb_tuple to = pkt->tuple;
	/* a key of 8 bytes (the map reads 4), so it shares no stack slot
	 * with a spilled register: see ct_scratch_of */
	__u64 svc_id = e->svc_id;
	struct service_key *svc;
	int ret;

	svc = bpf_map_lookup_elem(&svc_vips, &svc_id);
	if (!svc)
		return XDP_PASS;
	ret = synproxy_reply(pkt, e, family);
	if (ret != XLB_CONTINUE)
		return ret;
	ct_track(e, pkt, now);
	client_addr_reply(pkt, e, family);

	to.src = svc->vip;
	if (svc->port)
		to.sport = svc->port;
	ct_addr(e, family, &to.dst);
	to.dport = e->port;
	count_traffic(svc_id, e->real_id, pkt->len, true, false);
	return send_rewritten(ctx, pkt, &to, 0);
}

/* pick_real returns the real a new connection of t goes to: the one its
 * client prefix is bound to (persistence), else the scheduler's. A
 * persistent service's prefix is bound to it from now on. Its stack is
 * its own only while it runs, which keeps new_connection's frame small. */
static __always_inline long pick_real(const struct service *svc,
				      const struct xlb_tuple *t, __u32 now)
{
	struct persist_key pkey = {};
	long picked;

	picked = persist_pick(svc, t, now, &pkey);
	if (picked < 0)
		picked = sched_pick(svc, t);
	if (picked >= 0 && svc->persist_timeout)
		persist_remember(svc, &pkey, picked, now);
	return picked;
}

/* new_connection schedules a real, takes a local IP and port and stores
 * both entries; p is the probe for the forward key, e the live entry it
 * found if any (a closing connection whose key a new one reuses, or one
 * that lost its reverse entry), whose slot is then taken over. On
 * XLB_CONTINUE, p->slot is the new forward entry's slot. */
static __noinline int new_connection(struct pkt *pkt, const struct service *svc,
				     struct ct_probe *p, struct ct_entry *e,
				     const __u8 family)
{
	__u32 now = pkt->now;
	const struct xlb_tuple *t = &pkt->tuple;
	struct ct_entry entry = {}, *fwd_slot, *rev_slot;
	__u32 real_id, laddr_id, slot;
	struct sched_cursor *cursor;
	struct ct_scratch *scratch;
	struct lport_req *req;
	struct laddr *laddr;
	struct real *real;
	__u8 state;
	long picked;

	stage_end(XLB_STAGE_LOOKUP);
	stage_end(XLB_STAGE_TIMER);
	/* only a SYN opens a TCP connection, as in IPVS: anything else
	 * without one (a stray ACK, RST or FIN, a scan) is not forwarded */
	if (t->proto == IPPROTO_TCP && !pkt->cookie_ok &&
	    (pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK | XLB_TCP_RST |
			       XLB_TCP_FIN)) != XLB_TCP_SYN) {
		/* without even an expired entry: it was flushed (or never
		 * there: a scan, a stray segment) */
		if (pkt->ct_miss)
			count_ct(family, CT_STAT_MISS_FORWARD);
		return count_drop(DROP_TCP_NOT_SYN);
	}
	picked = pick_real(svc, t, now);
	if (picked < 0)
		return count_drop(DROP_NO_REAL);
	real_id = picked;
	real = bpf_map_lookup_elem(&reals, &real_id);
	if (!real)
		return count_drop(DROP_NO_REAL);
	stage_end(XLB_STAGE_SCHEDULE);

	cursor = bpf_map_lookup_elem(&sched_cursors, &svc->id);
	if (!cursor || svc->laddr_count == 0)
		return count_drop(DROP_NO_LADDR);
	slot = cursor->next_laddr++ % svc->laddr_count;
	if (slot >= XLB_MAX_SVC_LADDRS)
		return count_drop(DROP_NO_LADDR);
	laddr_id = svc->laddr_ids[slot];
	laddr = bpf_map_lookup_elem(&laddrs, &laddr_id);
	if (!laddr || laddr->family != family)
		return count_drop(DROP_NO_LADDR);

	/* a full table refuses the new connection, never evicts an
	 * established one: only a stale half-open one gives way */
	if (e) {
		fwd_slot = ct_claim(e, p->slot, now, true, family) ? e : NULL;
	} else {
		xlb_ct_claim_free(p, now, family);
		fwd_slot = ct_slot(p->slot, family);
	}
	if (!fwd_slot) {
		count_ct(family, CT_STAT_FULL);
		return count_drop(DROP_CONN_TABLE_FULL);
	}
	stage_end(XLB_STAGE_FWD_SLOT);
	scratch = ct_scratch_of();
	if (!scratch) {
		ct_release(fwd_slot);
		return XDP_ABORTED;
	}
	req = (struct lport_req *)scratch->lport;
	__builtin_memset(req, 0, sizeof(*req));
	req->laddr = laddr->addr;
	req->real = real->addr;
	req->laddr_id = laddr_id;
	req->rport = real->port ? real->port : t->dport;
	req->proto = t->proto;
	req->family = family;
	xlb_lport_alloc(req, now);
	stage_end(XLB_STAGE_PORT);
	rev_slot = ct_slot(req->slot, family);
	if (!req->port || !rev_slot) {
		ct_release(fwd_slot);
		if (!req->full)
			return count_no_lport(&svc->id, &req->laddr_id);
		count_ct(family, CT_STAT_FULL);
		return count_drop(DROP_CONN_TABLE_FULL);
	}

	/* the reverse entry first: a reply may come before the next
	 * packet of the client, never before this one is forwarded */
	state = ct_initial_state(pkt);
	entry.last_seen = now;
	entry.state = state;
	entry.flags = CT_F_REVERSE | client_addr_flags(svc, pkt) |
		      (pkt->cookie_ok ? CT_F_SYNPROXY : 0);
	entry.svc_id = svc->id;
	entry.real_id = real_id;
	entry.port = t->sport;
	entry.peer = p->slot;
	ct_publish(rev_slot, &req->key, &entry, &t->src, family);
	client_addr_open(rev_slot, pkt, family);

	entry.flags &= ~CT_F_REVERSE;
	if (svc->persist_timeout)
		entry.flags |= CT_F_PERSIST;
	entry.port = req->port;
	entry.peer = req->slot;
	ct_publish(fwd_slot, &p->key, &entry, &laddr->addr, family);
	client_addr_open(fwd_slot, pkt, family);
	/* two entries written (new slots, or expired ones taken over) */
	count_ct(family, CT_STAT_INSERTS);
	count_ct(family, CT_STAT_INSERTS);
	if (p->dropped)
		count_ct(family, CT_STAT_HALF_OPEN_DROPS);
	if (req->dropped)
		count_ct(family, CT_STAT_HALF_OPEN_DROPS);
	if (xlb_sync_enabled)
		xlb_ct_sync_note(p->slot, family);
	stage_end(XLB_STAGE_INSERT);
	stage_count();
	return XLB_CONTINUE;
}

/* process_flow handles a parsed TCP or UDP packet of one family. The
 * family is a constant at every call, so the verifier follows each
 * family's path on its own (see ct_table.h). The stages are separate
 * functions so that each has its own 512-byte stack. */
static __noinline int process_flow(struct xdp_md *ctx, struct pkt *pkt,
				   const __u8 family)
{
	const struct xlb_tuple *t = &pkt->tuple;
	struct ct_probe probe;
	struct service *svc;
	struct ct_entry *e;
	__u32 flags;
	int ret;

	if (!dst_maybe_local(t))
		return XDP_PASS;
	pkt->now = ct_now();
	ct_key_set(&probe.key, family, &t->src, &t->dst, t->sport, t->dport,
		   t->proto);
	e = ct_find(&probe, pkt->now, family);
	if (!probe.seen)
		pkt->ct_miss = 1;
	if (e && (e->flags & CT_F_SYNPROXY))
		synproxy_reopening(ctx, pkt, e, family);
	if (e && !pkt->cookie_ok && !ct_reopens(e, pkt)) {
		__u8 state = e->state;

		if (e->flags & CT_F_REVERSE)
			return reply_to_client(ctx, pkt, e, family);
		ret = forward_to_real(ctx, pkt, e, false, family);
		if (ret >= 0) {
			/* the other nodes learn that it is established,
			 * closing or closed */
			if (xlb_sync_enabled && e->state != state)
				xlb_ct_sync_note(probe.slot, family);
			return ret;
		}
	}

	flags = dst_flags(t);
	if (!(flags & XLB_ADDR_VIP)) {
		ct_count_reply_miss(pkt, flags, family);
		return XDP_PASS;
	}
	svc = service_lookup(t);
	if (!svc)
		return XDP_PASS;
	if ((svc->flags & XLB_SVC_F_SYN_PROXY) && t->proto == IPPROTO_TCP &&
	    !pkt->cookie_ok) {
		ret = synproxy_new(ctx, pkt);
		if (ret != XLB_CONTINUE)
			return ret;
	}
	ret = new_connection(pkt, svc, &probe, e, family);
	if (ret >= 0)
		return ret;
	e = ct_slot(probe.slot, family);
	if (!e)
		return XDP_ABORTED;
	return forward_to_real(ctx, pkt, e, true, family);
}

static __always_inline int process(struct xdp_md *ctx, struct pkt *pkt)
{
	int ret;

	ret = parse(ctx, pkt);
	if (ret >= 0)
		return ret;
	if (pkt->tuple.family == XLB_AF_INET) {
		if (pkt->tuple.proto == IPPROTO_ICMP)
			return icmp_translate(ctx, pkt, XLB_AF_INET);
		return process_flow(ctx, pkt, XLB_AF_INET);
	}
	if (pkt->tuple.proto == IPPROTO_ICMPV6)
		return icmp_translate(ctx, pkt, XLB_AF_INET6);
	return process_flow(ctx, pkt, XLB_AF_INET6);
}

/* xdp.frags: the loader clears BPF_F_XDP_HAS_FRAGS where the kernel has
 * no multi-buffer XDP (frags.h) */
SEC("xdp.frags")
int xlb_xdp(struct xdp_md *ctx)
{
	struct pkt pkt = {};
	int verdict;

	stage_start();
	verdict = process(ctx, &pkt);
	if (verdict == XLB_TOO_BIG) {
		verdict = pmtu_too_big(ctx, &pkt);
	} else {
		if (verdict == XLB_SYNACK)
			verdict = xlb_synproxy_synack(ctx, &pkt);
		else if (verdict == XLB_PROXY_ACK)
			verdict = xlb_synproxy_ack(ctx, &pkt);
		else if (pkt.edit == TCP_EDIT_TO_SYN && verdict == XDP_REDIRECT)
			verdict = xlb_synproxy_syn(ctx, &pkt);
		else if (pkt.edit == TCP_EDIT_FIELDS && verdict == XDP_REDIRECT)
			verdict = xlb_tcp_edit(ctx, &pkt);
		if (pkt.csum_off)
			verdict = nat_finish(ctx, &pkt, verdict);
	}
	stage_end(XLB_STAGE_SEND);
	if (verdict == XDP_DROP && xlb_drop_listeners)
		xlb_drop_sample(ctx);
	return count_verdict(verdict);
}

/* xlb_steer spreads flows over the worker CPUs (lib/steer.h), where
 * xlb_xdp runs as the cpumap program. */
SEC("xdp.frags")
int xlb_steer(struct xdp_md *ctx)
{
	return steer(ctx);
}
