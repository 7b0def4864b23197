/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Forwarding a packet: the kernel's FIB chooses the egress interface, the
 * neighbour's MAC and the route's MTU, and the packet is redirected
 * through the tx_ports devmap. The next hop is found before the packet is
 * rewritten, so that one too large for the egress MTU can still be
 * answered with an ICMP error quoting it as its sender sent it (pmtu.h).
 *
 * A rewritten packet is never passed to the kernel: its source is one of
 * our own addresses, and the kernel would drop it as a martian. When the
 * neighbour is not resolved, the packet is dropped and counted, and the
 * daemon is asked to resolve the next hop (neigh_requests), so that the
 * sender's retransmission goes through.
 */
#ifndef XLB_FIB_H
#define XLB_FIB_H

#include "maps.h"
#include "parse.h"
#include "stats.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

/* fib_redirect writes the next hop's MACs and redirects. An egress
 * interface xlb is not attached to cannot take the packet (nor can the
 * kernel, which would see our own address as its source): dropped. The
 * verdict is a constant, so the verifier knows it from every caller. */
static __always_inline int fib_redirect(struct pkt *pkt,
					const struct fib_cache_entry *hop)
{
	__builtin_memcpy(pkt->eth->h_dest, hop->dmac, ETH_ALEN);
	__builtin_memcpy(pkt->eth->h_source, hop->smac, ETH_ALEN);
	if (bpf_redirect_map(&tx_ports, hop->ifindex, 0) == XDP_REDIRECT)
		return XDP_REDIRECT;
	return count_drop(DROP_FIB);
}

/* neigh_request tells the daemon the next hop a lookup found unresolved
 * (the lookup leaves the gateway, or the on-link destination, in the
 * destination field). A full ring loses the request: the next packet
 * sends it again. */
static __always_inline void neigh_request(const struct bpf_fib_lookup *fib)
{
	struct neigh_request *req;

	req = bpf_ringbuf_reserve(&neigh_requests, sizeof(*req), 0);
	if (!req)
		return;
	__builtin_memset(req, 0, sizeof(*req));
	req->ifindex = fib->ifindex;
	if (fib->family == AF_INET) {
		req->family = XLB_AF_INET;
		req->addr.w[0] = fib->ipv4_dst;
	} else {
		req->family = XLB_AF_INET6;
		__builtin_memcpy(req->addr.w, fib->ipv6_dst,
				 sizeof(req->addr.w));
	}
	bpf_ringbuf_submit(req, 0);
}

/* fib_nexthop finds the next hop of a packet that will go to->src ->
 * to->dst, into hop. real_slot is the id + 1 of the real it goes to, whose
 * next hop is cached in real_nexthops, or 0 for any other destination
 * (cached in fib_cache). */
static __always_inline int fib_nexthop(struct xdp_md *ctx, struct pkt *pkt,
				       const struct xlb_tuple *to,
				       __u32 real_slot,
				       struct fib_cache_entry *hop)
{
	struct fib_cache_key key = {.dst = to->dst, .family = to->family};
	struct bpf_fib_lookup fib = {};
	struct fib_cache_entry *cached;
	__u32 real_id = real_slot - 1;
	long rc;

	if (real_slot)
		cached = bpf_map_lookup_elem(&real_nexthops, &real_id);
	else
		cached = bpf_map_lookup_elem(&fib_cache, &key);
	if (cached && cached->expires >= pkt->now) {
		*hop = *cached;
		return XLB_CONTINUE;
	}

	/* tot_len stays 0: the lookup then reports the route's MTU instead
	 * of checking it, and pmtu.h answers a packet above it */
	fib.ifindex = ctx->ingress_ifindex;
	fib.l4_protocol = to->proto;
	fib.sport = to->sport;
	fib.dport = to->dport;
	if (to->family == XLB_AF_INET) {
		fib.family = AF_INET;
		fib.ipv4_src = to->src.w[0];
		fib.ipv4_dst = to->dst.w[0];
	} else {
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, to->src.w, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, to->dst.w, sizeof(fib.ipv6_dst));
	}

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		break;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		neigh_request(&fib);
		return count_drop(DROP_NO_NEIGH);
	default:
		return count_drop(DROP_FIB);
	}
	hop->ifindex = fib.ifindex;
	hop->expires = pkt->now + xlb_cfg.fib_cache_ttl;
	hop->mtu = fib.mtu_result;
	__builtin_memcpy(hop->smac, fib.smac, ETH_ALEN);
	__builtin_memcpy(hop->dmac, fib.dmac, ETH_ALEN);
	if (xlb_cfg.fib_cache_ttl) {
		if (real_slot)
			bpf_map_update_elem(&real_nexthops, &real_id, hop,
					    BPF_ANY);
		else
			bpf_map_update_elem(&fib_cache, &key, hop, BPF_ANY);
	}
	return XLB_CONTINUE;
}

/* fib_forward sends an already rewritten packet to its destination. */
static __always_inline int fib_forward(struct xdp_md *ctx, struct pkt *pkt,
				       __u32 real_slot)
{
	struct fib_cache_entry hop;
	int ret;

	ret = fib_nexthop(ctx, pkt, &pkt->tuple, real_slot, &hop);
	if (ret >= 0)
		return ret;
	return fib_redirect(pkt, &hop);
}

#endif /* XLB_FIB_H */
