/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * FullNAT rewrite: both addresses and both ports of a packet replaced, TTL
 * or hop limit decremented, and the IPv4 header and TCP/UDP checksums
 * updated incrementally (csum.h). The L4 checksum sees the address change
 * through its pseudo-header.
 */
#ifndef XLB_NAT_H
#define XLB_NAT_H

#include "csum.h"
#include "parse.h"
#include "stats.h"

/* nat_addrs_delta adds the change of an address to a checksum delta. */
static __always_inline void nat_addr_delta(struct csum_delta *d, __u8 family,
					   const struct xlb_addr *from,
					   const struct xlb_addr *to)
{
	int i;

	csum_delta_add32(d, from->w[0], to->w[0]);
	if (family == XLB_AF_INET)
		return;
#pragma unroll
	for (i = 1; i < 4; i++)
		csum_delta_add32(d, from->w[i], to->w[i]);
}

/* nat_rewrite_l3 writes the new addresses into the IP header, decrements
 * the TTL and adds the pseudo-header change to l4d. */
static __always_inline int nat_rewrite_l3(struct pkt *pkt,
					  const struct xlb_tuple *to,
					  struct csum_delta *l4d)
{
	const struct xlb_tuple *from = &pkt->tuple;

	nat_addr_delta(l4d, from->family, &from->src, &to->src);
	nat_addr_delta(l4d, from->family, &from->dst, &to->dst);

	if (from->family == XLB_AF_INET) {
		struct iphdr *iph = pkt->l3;
		struct csum_delta l3d = {};
		__u16 old_word;

		if ((void *)(iph + 1) > pkt->data_end)
			return XDP_ABORTED;
		if (iph->ttl <= 1)
			return count_drop(DROP_TTL_EXPIRED);
		old_word = *(__u16 *)&iph->ttl;
		iph->ttl--;
		csum_delta_add16(&l3d, old_word, *(__u16 *)&iph->ttl);
		csum_delta_merge(&l3d, l4d);
		iph->saddr = to->src.w[0];
		iph->daddr = to->dst.w[0];
		iph->check = csum_apply(iph->check, &l3d);
		return XLB_CONTINUE;
	}

	struct ipv6hdr *ip6h = pkt->l3;

	if ((void *)(ip6h + 1) > pkt->data_end)
		return XDP_ABORTED;
	if (ip6h->hop_limit <= 1)
		return count_drop(DROP_TTL_EXPIRED);
	ip6h->hop_limit--;
	__builtin_memcpy(&ip6h->saddr, to->src.w, sizeof(to->src.w));
	__builtin_memcpy(&ip6h->daddr, to->dst.w, sizeof(to->dst.w));
	return XLB_CONTINUE;
}

/* nat_rewrite rewrites pkt so that it goes to->src:sport -> to->dst:dport,
 * and leaves pkt->tuple describing the packet as it now is. */
static __always_inline int nat_rewrite(struct pkt *pkt,
				       const struct xlb_tuple *to)
{
	struct csum_delta l4d = {};
	int ret;

	ret = nat_rewrite_l3(pkt, to, &l4d);
	if (ret >= 0)
		return ret;
	csum_delta_add16(&l4d, pkt->tuple.sport, to->sport);
	csum_delta_add16(&l4d, pkt->tuple.dport, to->dport);

	if (pkt->tuple.proto == IPPROTO_TCP) {
		struct tcphdr *tcp = pkt->l4;

		if ((void *)(tcp + 1) > pkt->data_end)
			return XDP_ABORTED;
		tcp->source = to->sport;
		tcp->dest = to->dport;
		tcp->check = csum_apply(tcp->check, &l4d);
	} else {
		struct udphdr *udp = pkt->l4;

		if ((void *)(udp + 1) > pkt->data_end)
			return XDP_ABORTED;
		udp->source = to->sport;
		udp->dest = to->dport;
		udp->check = csum_apply_udp(udp->check, &l4d);
	}
	pkt->tuple = *to;
	return XLB_CONTINUE;
}

#endif /* XLB_NAT_H */
