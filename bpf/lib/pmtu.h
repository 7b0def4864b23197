/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Path MTU: a packet larger than its egress MTU is answered as a router
 * (or IPVS) answers it, since XDP cannot fragment. IPv4 with DF set gets
 * ICMP fragmentation needed, IPv6 gets Packet Too Big, both carrying the
 * egress MTU, sent back out of the interface the packet came in on, from
 * the address its sender talked to (the VIP for a client, the local IP for
 * a real) and quoting the packet as the sender sent it. IPv4 without DF is
 * dropped and counted. At most XLB_ICMP_PER_SEC errors per CPU and second
 * are sent; the rest are dropped and counted.
 *
 * The error leaves by a redirect to the ingress interface, not XDP_TX:
 * a veth peer without an XDP program (GRO on) is not woken for XDP_TX
 * frames, which then wait for the next redirected frame to be delivered.
 *
 * The error is built in place: the frame is cut to its L2 header and the
 * quote (which frees a multi-buffer frame's other buffers), room for the new IP and ICMP headers is made in front of the
 * quote, and the L2 header moves to the new front with its MACs swapped.
 */
#ifndef XLB_PMTU_H
#define XLB_PMTU_H

#include "csum.h"
#include "maps.h"
#include "parse.h"
#include "stats.h"

#define XLB_ICMP_TTL 64 /* TTL / hop limit of the errors we send */

/* icmp_budget_take takes one error from this CPU's budget of the current
 * second; false means none is left. */
static __always_inline bool icmp_budget_take(void)
{
	__u64 second = bpf_ktime_get_ns() / NSEC_PER_SEC;
	struct icmp_budget *b;
	__u32 zero = 0;

	b = bpf_map_lookup_elem(&icmp_budgets, &zero);
	if (!b)
		return false;
	if (b->second != second) {
		b->second = second;
		b->sent = 0;
	}
	if (b->sent >= XLB_ICMP_PER_SEC)
		return false;
	b->sent++;
	return true;
}

/* pmtu_quote_fits tells whether the first buffer holds the quote: the
 * frame is cut to it, and an error is built in the first buffer alone (a
 * multi-buffer frame's other buffers are given back by the cut). */
static __always_inline bool pmtu_quote_fits(const struct pkt *pkt, __u32 quote)
{
	return pkt->l3 + quote <= pkt->data_end;
}

/* pmtu_reshape keeps the frame's L2 header and quote bytes of its IP
 * packet, and makes room for hdrs bytes of new headers between them. The
 * L2 header is written at the new front with source and destination
 * swapped. Returns the frame's new start, or NULL. */
static __always_inline void *pmtu_reshape(struct xdp_md *ctx, struct pkt *pkt,
					  __u32 quote, __u32 hdrs)
{
	struct ethhdr eth = *pkt->eth;
	__u32 l3_off = pkt->l3_off;
	__be32 vlan = 0;
	void *data, *data_end;

	if (l3_off > sizeof(struct ethhdr)) {
		if ((void *)pkt->eth + sizeof(eth) + sizeof(vlan) >
		    pkt->data_end)
			return NULL;
		vlan = *(__be32 *)((void *)pkt->eth + sizeof(eth));
	}
	if (bpf_xdp_adjust_tail(ctx, (int)(l3_off + quote) - (int)pkt->len))
		return NULL;
	if (bpf_xdp_adjust_head(ctx, -(int)hdrs))
		return NULL;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(eth) + sizeof(vlan) > data_end)
		return NULL;
	__builtin_memcpy(((struct ethhdr *)data)->h_dest, eth.h_source,
			 ETH_ALEN);
	__builtin_memcpy(((struct ethhdr *)data)->h_source, eth.h_dest,
			 ETH_ALEN);
	((struct ethhdr *)data)->h_proto = eth.h_proto;
	if (vlan)
		*(__be32 *)(data + sizeof(eth)) = vlan;
	return data;
}

/* pmtu_icmp4 turns an IPv4 packet into ICMP fragmentation needed. */
static __always_inline int pmtu_icmp4(struct xdp_md *ctx, struct pkt *pkt,
				      __u32 mtu)
{
	const __u32 hdrs = sizeof(struct iphdr) + 8;
	__be32 saddr = pkt->tuple.dst.w[0], daddr = pkt->tuple.src.w[0];
	struct iphdr *iph = pkt->l3;
	__u32 l3_off = pkt->l3_off;
	__u64 sum = 0;
	__u8 *icmp;
	void *data;

	if ((void *)(iph + 1) > pkt->data_end)
		return XDP_ABORTED;
	if (!(iph->frag_off & bpf_htons(XLB_IP_DF)))
		return count_drop(DROP_FRAG_NEEDED);
	if (pkt->ip_len < XLB_ICMP4_QUOTE ||
	    !pmtu_quote_fits(pkt, XLB_ICMP4_QUOTE) || !icmp_budget_take())
		return count_drop(DROP_TOO_BIG);
	data = pmtu_reshape(ctx, pkt, XLB_ICMP4_QUOTE, hdrs);
	if (!data || l3_off > sizeof(struct ethhdr) + 4)
		return XDP_ABORTED;
	iph = data + l3_off;
	icmp = (void *)(iph + 1);
	if ((void *)(icmp + 8 + XLB_ICMP4_QUOTE) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;

	*(__u16 *)iph = bpf_htons(0x4500 | 0xc0); /* version 4, IHL 5, CS6 */
	iph->tot_len = bpf_htons(hdrs + XLB_ICMP4_QUOTE);
	iph->id = 0;
	iph->frag_off = 0;
	iph->ttl = XLB_ICMP_TTL;
	iph->protocol = IPPROTO_ICMP;
	iph->check = 0;
	iph->saddr = saddr;
	iph->daddr = daddr;
	iph->check = ~csum_fold64(
		(__u32)bpf_csum_diff(NULL, 0, (void *)iph, sizeof(*iph), 0));

	icmp[0] = XLB_ICMP_DEST_UNREACH;
	icmp[1] = XLB_ICMP_FRAG_NEEDED;
	*(__u16 *)(icmp + 2) = 0;
	*(__u16 *)(icmp + 4) = 0;		       /* unused */
	*(__be16 *)(icmp + 6) = bpf_htons((__u16)mtu); /* next-hop MTU */
	sum = (__u32)bpf_csum_diff(NULL, 0, (void *)icmp, 8 + XLB_ICMP4_QUOTE,
				   0);
	*(__u16 *)(icmp + 2) = ~csum_fold64(sum);
	return XDP_TX;
}

/* pmtu_icmp6 turns an IPv6 packet into ICMPv6 Packet Too Big. */
static __always_inline int pmtu_icmp6(struct xdp_md *ctx, struct pkt *pkt,
				      __u32 mtu)
{
	const __u32 hdrs = sizeof(struct ipv6hdr) + 8;
	const __u32 payload = 8 + XLB_ICMP6_QUOTE;
	struct xlb_tuple t = pkt->tuple;
	__u32 l3_off = pkt->l3_off;
	struct ipv6hdr *ip6h;
	__u64 sum;
	__u8 *icmp;
	void *data;

	if (pkt->ip_len < XLB_ICMP6_QUOTE ||
	    !pmtu_quote_fits(pkt, XLB_ICMP6_QUOTE) || !icmp_budget_take())
		return count_drop(DROP_TOO_BIG);
	data = pmtu_reshape(ctx, pkt, XLB_ICMP6_QUOTE, hdrs);
	if (!data || l3_off > sizeof(struct ethhdr) + 4)
		return XDP_ABORTED;
	ip6h = data + l3_off;
	icmp = (void *)(ip6h + 1);
	if ((void *)(icmp + payload) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;

	*(__be32 *)ip6h = bpf_htonl(0x60000000); /* version 6, no class/flow */
	ip6h->payload_len = bpf_htons(payload);
	ip6h->nexthdr = IPPROTO_ICMPV6;
	ip6h->hop_limit = XLB_ICMP_TTL;
	__builtin_memcpy(&ip6h->saddr, t.dst.w, sizeof(t.dst.w));
	__builtin_memcpy(&ip6h->daddr, t.src.w, sizeof(t.src.w));

	icmp[0] = XLB_ICMPV6_PKT_TOOBIG;
	icmp[1] = 0;
	*(__u16 *)(icmp + 2) = 0;
	*(__be32 *)(icmp + 4) = bpf_htonl(mtu);
	/* the pseudo-header: both addresses, length, next header */
	sum = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		sum = csum_add_word32(sum, t.src.w[i]);
		sum = csum_add_word32(sum, t.dst.w[i]);
	}
	sum += bpf_htons(payload) + bpf_htons(IPPROTO_ICMPV6);
	sum += (__u32)bpf_csum_diff(NULL, 0, (void *)icmp, payload, 0);
	*(__u16 *)(icmp + 2) = ~csum_fold64(sum);
	return XDP_TX;
}

/* pmtu_too_big answers a packet larger than its egress MTU, pkt->mtu
 * (see above). */
static __noinline int pmtu_too_big(struct xdp_md *ctx, struct pkt *pkt)
{
	int ret;

	if (pkt->tuple.family == XLB_AF_INET)
		ret = pmtu_icmp4(ctx, pkt, pkt->mtu);
	else
		ret = pmtu_icmp6(ctx, pkt, pkt->mtu);
	if (ret != XDP_TX)
		return ret;
	count_event(EVENT_ICMP_TOO_BIG);
	/* an interface xlb is not attached to (only BPF_PROG_RUN runs the
	 * program there) sends it back with XDP_TX */
	if (bpf_redirect_map(&tx_ports, ctx->ingress_ifindex, 0) ==
	    XDP_REDIRECT)
		return XDP_REDIRECT;
	return XDP_TX;
}

#endif /* XLB_PMTU_H */
