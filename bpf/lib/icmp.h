/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP and ICMPv6 errors about tracked connections (destination
 * unreachable, fragmentation needed / packet too big, time exceeded).
 *
 * An error quotes the packet that caused it. When that packet belongs to a
 * connection we track, the error is translated so that the other side
 * recognises its own packet in the quote, as IPVS does for NAT:
 *   from the real side (quoting laddr:lport -> real:rport): sent to the
 *     client as VIP -> client, quoting client:cport -> VIP:vport;
 *   from the client side (quoting VIP:vport -> client:cport): sent to the
 *     real as laddr -> real, quoting real:rport -> laddr:lport.
 * This is what lets path MTU discovery work through FullNAT. The quoted
 * IPv4 header checksum and a quoted UDP checksum are updated; the quoted
 * TCP checksum lies beyond the 8 bytes every error carries and is left.
 */
#ifndef XLB_ICMP_H
#define XLB_ICMP_H

#include "conntrack.h"
#include "csum.h"
#include "fib.h"
#include "nat.h"

#define XLB_ICMP_HDR_LEN 8 /* type, code, checksum, 4 bytes of the type's */

/* icmp_is_error tells the error types that quote a packet we translate. */
static __always_inline bool icmp_is_error(__u8 family, __u8 type)
{
	if (family == XLB_AF_INET)
		return type == XLB_ICMP_DEST_UNREACH ||
		       type == XLB_ICMP_TIME_EXCEEDED;
	return type == XLB_ICMPV6_DEST_UNREACH ||
	       type == XLB_ICMPV6_PKT_TOOBIG || type == XLB_ICMPV6_TIME_EXCEED;
}

/* icmp_parse_inner reads the quoted packet's tuple and finds its L3 and L4
 * headers. Returns XLB_CONTINUE or the verdict for an unusable quote. */
static __always_inline int icmp_parse_inner(struct pkt *pkt, void **in_l3,
					    void **in_l4,
					    struct xlb_tuple *inner)
{
	void *l3 = pkt->l4 + XLB_ICMP_HDR_LEN;
	void *l4;

	__builtin_memset(inner, 0, sizeof(*inner));
	inner->family = pkt->tuple.family;
	if (inner->family == XLB_AF_INET) {
		struct iphdr *iph = l3;
		__u32 ihl;

		if ((void *)(iph + 1) > pkt->data_end)
			return drop_if_vip(&pkt->tuple, DROP_ICMP_INNER);
		ihl = iph->ihl * 4;
		if (iph->version != 4 || ihl < sizeof(*iph))
			return drop_if_vip(&pkt->tuple, DROP_ICMP_INNER);
		inner->src.w[0] = iph->saddr;
		inner->dst.w[0] = iph->daddr;
		inner->proto = iph->protocol;
		l4 = l3 + ihl;
	} else {
		struct ipv6hdr *ip6h = l3;

		if ((void *)(ip6h + 1) > pkt->data_end)
			return drop_if_vip(&pkt->tuple, DROP_ICMP_INNER);
		__builtin_memcpy(inner->src.w, &ip6h->saddr, 16);
		__builtin_memcpy(inner->dst.w, &ip6h->daddr, 16);
		inner->proto = ip6h->nexthdr;
		l4 = ip6h + 1;
	}
	if (inner->proto != IPPROTO_TCP && inner->proto != IPPROTO_UDP)
		return XDP_PASS;
	/* ports and (UDP) checksum: the 8 bytes every error must quote */
	if (l4 + 8 > pkt->data_end)
		return drop_if_vip(&pkt->tuple, DROP_ICMP_INNER);
	inner->sport = ((__be16 *)l4)[0];
	inner->dport = ((__be16 *)l4)[1];
	*in_l3 = l3;
	*in_l4 = l4;
	return XLB_CONTINUE;
}

/* icmp_views computes what the quoted packet and the error itself become,
 * from the connection entry e the quote belongs to. */
static __always_inline int icmp_views(const struct ct_entry *e,
				      const struct xlb_tuple *inner,
				      struct xlb_tuple *new_inner,
				      struct xlb_tuple *new_outer,
				      const __u8 family)
{
	struct xlb_addr peer;
	__u32 id;

	ct_addr(e, family, &peer);
	*new_inner = *inner;
	*new_outer = *inner;
	if (e->flags & CT_F_REVERSE) {
		id = e->svc_id;
		struct service_key *svc = bpf_map_lookup_elem(&svc_vips, &id);

		if (!svc)
			return XDP_PASS;
		new_inner->src = peer;
		new_inner->sport = e->port;
		new_inner->dst = svc->vip;
		if (svc->port)
			new_inner->dport = svc->port;
		new_outer->src = svc->vip;
		new_outer->dst = peer;
	} else {
		id = e->real_id;
		struct real *real = bpf_map_lookup_elem(&reals, &id);

		if (!real)
			return XDP_PASS;
		new_inner->src = real->addr;
		if (real->port)
			new_inner->sport = real->port;
		new_inner->dst = peer;
		new_inner->dport = e->port;
		new_outer->src = peer;
		new_outer->dst = real->addr;
	}
	return XLB_CONTINUE;
}

/* icmp_rewrite_inner rewrites the quoted packet and returns, in icmp_d,
 * the change of every quoted word the ICMP checksum covers. */
static __always_inline int icmp_rewrite_inner(struct pkt *pkt, void *in_l3,
					      void *in_l4,
					      const struct xlb_tuple *from,
					      const struct xlb_tuple *to,
					      struct csum_delta *icmp_d)
{
	struct csum_delta addr_d = {}, l4_d = {};
	__be16 *ports = in_l4;

	nat_addr_delta(&addr_d, from->family, &from->src, &to->src);
	nat_addr_delta(&addr_d, from->family, &from->dst, &to->dst);
	csum_delta_merge(icmp_d, &addr_d);
	if (from->family == XLB_AF_INET) {
		struct iphdr *iph = in_l3;
		__u16 check;

		if ((void *)(iph + 1) > pkt->data_end)
			return XDP_ABORTED;
		iph->saddr = to->src.w[0];
		iph->daddr = to->dst.w[0];
		check = csum_apply(iph->check, &addr_d);
		csum_delta_add16(icmp_d, iph->check, check);
		iph->check = check;
	} else {
		struct ipv6hdr *ip6h = in_l3;

		if ((void *)(ip6h + 1) > pkt->data_end)
			return XDP_ABORTED;
		__builtin_memcpy(&ip6h->saddr, to->src.w, 16);
		__builtin_memcpy(&ip6h->daddr, to->dst.w, 16);
	}

	if ((void *)(ports + 4) > pkt->data_end)
		return XDP_ABORTED;
	csum_delta_add16(&l4_d, ports[0], to->sport);
	csum_delta_add16(&l4_d, ports[1], to->dport);
	csum_delta_merge(icmp_d, &l4_d);
	ports[0] = to->sport;
	ports[1] = to->dport;
	if (from->proto == IPPROTO_UDP && ports[3]) {
		__u16 check;

		csum_delta_merge(&l4_d, &addr_d);
		check = csum_apply_udp(ports[3], &l4_d);
		csum_delta_add16(icmp_d, ports[3], check);
		ports[3] = check;
	}
	return XLB_CONTINUE;
}

/* icmp_translate handles an ICMP or ICMPv6 packet: errors about our
 * connections are translated and forwarded, everything else passes. */
static __noinline int icmp_translate(struct xdp_md *ctx, struct pkt *pkt,
				     const __u8 family)
{
	struct xlb_tuple inner, new_inner, new_outer;
	struct csum_delta icmp_d = {}, pseudo_d = {};
	void *in_l3 = NULL, *in_l4 = NULL;
	__u16 *icmp_check;
	struct ct_scratch *scratch;
	struct ct_probe *probe;
	struct ct_entry *e;
	__u8 *icmp;
	int ret;

	icmp = pkt->l4;
	if ((void *)(icmp + XLB_ICMP_HDR_LEN) > pkt->data_end)
		return XDP_ABORTED;
	if (!icmp_is_error(family, icmp[0]))
		return XDP_PASS;
	ret = icmp_parse_inner(pkt, &in_l3, &in_l4, &inner);
	if (ret >= 0)
		return ret;

	/* the connection as a packet from the quote's destination sees it */
	/* the probe lives off the stack: this frame is large already */
	scratch = ct_scratch_of();
	if (!scratch)
		return XDP_ABORTED;
	probe = (struct ct_probe *)scratch->probe;
	ct_key_set(&probe->key, family, &inner.dst, &inner.src, inner.dport,
		   inner.sport, inner.proto);
	pkt->now = ct_now();
	e = ct_find(probe, pkt->now, family);
	if (!e)
		return XDP_PASS;
	ret = icmp_views(e, &inner, &new_inner, &new_outer, family);
	if (ret >= 0)
		return ret;
	count_traffic(e->svc_id, e->real_id, pkt->len, e->flags & CT_F_REVERSE,
		      false);

	ret = icmp_rewrite_inner(pkt, in_l3, in_l4, &inner, &new_inner,
				 &icmp_d);
	if (ret >= 0)
		return ret;
	new_outer.proto = pkt->tuple.proto;
	new_outer.sport = 0;
	new_outer.dport = 0;
	ret = nat_rewrite_l3(pkt, &new_outer, &pseudo_d);
	if (ret >= 0)
		return ret;
	if (family == XLB_AF_INET6) /* ICMPv6 covers the pseudo-header */
		csum_delta_merge(&icmp_d, &pseudo_d);

	icmp = pkt->l4;
	if ((void *)(icmp + XLB_ICMP_HDR_LEN) > pkt->data_end)
		return XDP_ABORTED;
	icmp_check = (__u16 *)(icmp + 2);
	*icmp_check = csum_apply(*icmp_check, &icmp_d);
	pkt->tuple = new_outer;
	return fib_forward(ctx, pkt, 0);
}

#endif /* XLB_ICMP_H */
