/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * FullNAT rewrite: both addresses and both ports of a packet replaced, TTL
 * or hop limit decremented, and the IPv4 header and TCP/UDP checksums
 * updated incrementally (csum.h). The L4 checksum sees the address change
 * through its pseudo-header.
 *
 * A sender with TX checksum offload (a veth in a container or namespace)
 * hands over CHECKSUM_PARTIAL frames: the L4 checksum field holds only
 * the folded pseudo-header sum, and the device was to finish it. XDP sees
 * no skb flag, and the frame it redirects is verified whole by the
 * receiver. So a field equal to the folded pseudo-header sum gets a
 * checksum computed over the whole segment: correct for a partial frame,
 * and still correct for a complete checksum that has that value by chance.
 */
#ifndef XLB_NAT_H
#define XLB_NAT_H

#include "csum.h"
#include "csum_seg.h"
#include "parse.h"
#include "stats.h"
#include "tcp_edit.h"

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

/* l4_pseudo_sum is the unfolded sum of the TCP/UDP pseudo-header of a
 * segment of l4_len bytes between t's addresses (IPv4 and IPv6 alike: the
 * zero words of IPv6's 32-bit length and next header add nothing). */
static __always_inline __u32 l4_pseudo_sum(const struct xlb_tuple *t,
					   __u32 l4_len)
{
	__u32 sum = 0;
	int i;

	sum = csum_add_word32(sum, t->src.w[0]);
	sum = csum_add_word32(sum, t->dst.w[0]);
	if (t->family == XLB_AF_INET6) {
#pragma unroll
		for (i = 1; i < 4; i++) {
			sum = csum_add_word32(sum, t->src.w[i]);
			sum = csum_add_word32(sum, t->dst.w[i]);
		}
	}
	sum += bpf_htons(t->proto);
	sum += bpf_htons(l4_len);
	return sum;
}

/* nat_rewrite rewrites pkt so that it goes to->src:sport -> to->dst:dport
 * (and shifts its TCP numbers: tcp_edit.h, tcp_shift), and leaves
 * pkt->tuple describing the packet as it now is. */
static __always_inline int nat_rewrite(struct pkt *pkt,
				       const struct xlb_tuple *to)
{
	__u16 partial = csum_fold32(l4_pseudo_sum(&pkt->tuple, pkt->l4_len));
	struct csum_delta l4d = {};
	__u32 csum_off;
	int ret;

	ret = nat_rewrite_l3(pkt, to, &l4d);
	if (ret >= 0)
		return ret;
	csum_delta_add16(&l4d, pkt->tuple.sport, to->sport);
	csum_delta_add16(&l4d, pkt->tuple.dport, to->dport);
	if (pkt->edit == TCP_EDIT_SHIFT) {
		ret = tcp_shift(pkt, &l4d);
		if (ret >= 0)
			return ret;
	}

	if (pkt->tuple.proto == IPPROTO_TCP) {
		struct tcphdr *tcp = pkt->l4;

		if ((void *)(tcp + 1) > pkt->data_end)
			return XDP_ABORTED;
		tcp->source = to->sport;
		tcp->dest = to->dport;
		csum_off = XLB_TCP_CSUM_OFF;
		if (tcp->check == partial) {
			tcp->check = 0;
			goto full;
		}
		tcp->check = csum_apply(tcp->check, &l4d);
	} else {
		struct udphdr *udp = pkt->l4;

		if ((void *)(udp + 1) > pkt->data_end)
			return XDP_ABORTED;
		udp->source = to->sport;
		udp->dest = to->dport;
		csum_off = XLB_UDP_CSUM_OFF;
		if (udp->check == partial) {
			udp->check = 0;
			goto full;
		}
		udp->check = csum_apply_udp(udp->check, &l4d);
	}
	pkt->tuple = *to;
	return XLB_CONTINUE;

full:
	/* CHECKSUM_PARTIAL (see the top of this file): the segment is summed
	 * by nat_finish, once the packet has its verdict */
	pkt->csum_off = csum_off;
	pkt->tuple = *to;
	return XLB_CONTINUE;
}

/* nat_finish completes the checksum nat_rewrite left to it (the caller
 * calls it only then, pkt->csum_off set), once the
 * packet has its verdict: a redirect, whose frame goes out only when the
 * program returns. It runs at the program's top (xlb_xdp), in a frame of
 * its own, so that the summing's stack is not added to the deepest call
 * chain, and the verifier follows the summing once. */
static __noinline int nat_finish(struct xdp_md *ctx, struct pkt *pkt,
				 int verdict)
{
	if (verdict != XDP_REDIRECT && verdict != XDP_TX)
		return verdict;
	/* pkt->tuple is the rewritten packet's */
	if (l4_csum_fill(ctx, pkt->l4_off, pkt->l4_len,
			 l4_pseudo_sum(&pkt->tuple, pkt->l4_len),
			 pkt->csum_off))
		return count_drop(DROP_L4_TRUNCATED);
	return verdict;
}

#endif /* XLB_NAT_H */
