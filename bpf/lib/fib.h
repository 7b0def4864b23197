/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Forwarding a rewritten packet: the kernel's FIB chooses the egress
 * interface and the neighbour's MAC, and the packet is redirected through
 * the tx_ports devmap. When the neighbour is not resolved yet (or the
 * packet needs fragmenting), the packet goes to the kernel, which resolves
 * it (or sends the ICMP error) and forwards it itself.
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

/* fib_redirect writes the next hop's MACs and redirects; an egress
 * interface we do not own sends the packet to the kernel instead. */
static __always_inline int fib_redirect(struct pkt *pkt, __u32 ifindex,
					const __u8 *smac, const __u8 *dmac)
{
	__builtin_memcpy(pkt->eth->h_dest, dmac, ETH_ALEN);
	__builtin_memcpy(pkt->eth->h_source, smac, ETH_ALEN);
	return bpf_redirect_map(&tx_ports, ifindex, XDP_PASS);
}

/* fib_forward sends pkt to its destination. real_slot is the id + 1 of
 * the real it goes to, whose next hop is cached in real_nexthops, or 0 for
 * any other destination (cached in fib_cache). */
static __always_inline int fib_forward(struct xdp_md *ctx, struct pkt *pkt,
				       __u32 real_slot)
{
	const struct xlb_tuple *t = &pkt->tuple;
	struct fib_cache_key key = {.dst = t->dst, .family = t->family};
	struct fib_cache_entry *hop, fresh;
	struct bpf_fib_lookup fib = {};
	__u32 real_id = real_slot - 1;
	long rc;

	if (real_slot)
		hop = bpf_map_lookup_elem(&real_nexthops, &real_id);
	else
		hop = bpf_map_lookup_elem(&fib_cache, &key);
	if (hop && hop->expires >= pkt->now)
		return fib_redirect(pkt, hop->ifindex, hop->smac, hop->dmac);

	fib.ifindex = ctx->ingress_ifindex;
	fib.l4_protocol = t->proto;
	fib.sport = t->sport;
	fib.dport = t->dport;
	if (t->family == XLB_AF_INET) {
		struct iphdr *iph = pkt->l3;

		if ((void *)(iph + 1) > pkt->data_end)
			return XDP_ABORTED;
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = t->src.w[0];
		fib.ipv4_dst = t->dst.w[0];
	} else {
		struct ipv6hdr *ip6h = pkt->l3;

		if ((void *)(ip6h + 1) > pkt->data_end)
			return XDP_ABORTED;
		fib.family = AF_INET6;
		fib.tot_len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, t->src.w, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, t->dst.w, sizeof(fib.ipv6_dst));
	}

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		if (xlb_cfg.fib_cache_ttl) {
			fresh.ifindex = fib.ifindex;
			fresh.expires = pkt->now + xlb_cfg.fib_cache_ttl;
			__builtin_memcpy(fresh.smac, fib.smac, ETH_ALEN);
			__builtin_memcpy(fresh.dmac, fib.dmac, ETH_ALEN);
			if (real_slot)
				bpf_map_update_elem(&real_nexthops, &real_id,
						    &fresh, BPF_ANY);
			else
				bpf_map_update_elem(&fib_cache, &key, &fresh,
						    BPF_ANY);
		}
		return fib_redirect(pkt, fib.ifindex, fib.smac, fib.dmac);
	case BPF_FIB_LKUP_RET_NO_NEIGH:
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		return XDP_PASS;
	default:
		return count_drop(DROP_FIB);
	}
}

#endif /* XLB_FIB_H */
