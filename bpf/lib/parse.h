/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet parsing: Ethernet (at most one 802.1Q/802.1ad tag), IPv4 (options
 * allowed), IPv6 (hop-by-hop, routing and destination options skipped),
 * TCP, UDP, ICMP, ICMPv6. Every bound is checked here, once; later stages
 * use the pointers in struct pkt without re-deriving them.
 *
 * Malformed IP headers are dropped whatever their destination (the kernel
 * would drop them too). Malformed transport headers and fragments are
 * dropped only when aimed at a VIP; other traffic is not ours and passes.
 *
 * Headers are read from the frame's first buffer. A multi-buffer frame
 * (frags.h) whose IP packet runs on into its other buffers has its length
 * taken whole; one whose headers do not fit in the first buffer is
 * dropped as header_split, never read in pieces.
 */
#ifndef XLB_PARSE_H
#define XLB_PARSE_H

#include "consts.h"
#include "frags.h"
#include "maps.h"
#include "stats.h"

/* The addresses and ports of one packet, network byte order. */
struct xlb_tuple {
	struct xlb_addr src;
	struct xlb_addr dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family;
	__u8 pad[2];
};

/* What parsing learnt about one packet. */
struct pkt {
	void *data_end;
	struct ethhdr *eth;
	void *l3; /* struct iphdr or struct ipv6hdr */
	void *l4; /* struct tcphdr, udphdr, icmphdr or icmp6hdr; 8+ bytes */
	struct xlb_tuple tuple;
	__u32 len;	/* frame length, all buffers, for byte counters */
	__u16 ip_len;	/* IP packet, headers included (what the MTU limits;
			 * an IPv6 one above 65535 bytes counts as 65535) */
	__u16 l4_len;	/* transport header and payload (UDP: its length) */
	__u16 l4_off;	/* frame offset of the transport header */
	__u8 l3_off;	/* frame offset of the IP header (14, or 18 tagged) */
	__u8 tcp_flags; /* TCP flag byte (FIN 0x01, SYN 0x02, RST 0x04, ACK
			   0x10) */
	__u32 now;	/* connection-table clock, seconds (conntrack.h) */
	/* nat_rewrite leaves the checksum of a CHECKSUM_PARTIAL segment to
	 * nat_finish: the checksum's offset in the L4 header, or 0 */
	__u8 csum_off;
	__u8 ct_miss; /* the connection lookup found no entry at all (an
		       * expired one is not a miss): process_flow */
	__u16 mtu;    /* with XLB_TOO_BIG: the egress MTU the packet exceeds */
	__u8 edit;    /* enum tcp_edit_op: this CPU's struct tcp_edit is the
		    * packet's (tcp_edit.h) */
	__u8 grow;    /* bytes that edit adds to the packet */
	__u8 cookie_ok; /* a TCP ACK that returned a SYN cookie (synproxy.h) */
};

#define XLB_TCP_FIN 0x01
#define XLB_TCP_SYN 0x02
#define XLB_TCP_RST 0x04
#define XLB_TCP_ACK 0x10

/* dst_maybe_local tells, from local_addr_filter, whether the destination
 * can be ours: false means certainly not. */
static __always_inline bool dst_maybe_local(const struct xlb_tuple *t)
{
	const __u32 *w = t->dst.w;
	__u32 bit = ((w[0] ^ w[1] ^ w[2] ^ w[3]) * XLB_ADDR_FILTER_MULT) >> 16;
	__u32 word = bit / 64;
	__u64 *bits = bpf_map_lookup_elem(&local_addr_filter, &word);

	return bits && (*bits & (1ULL << (bit % 64)));
}

/* dst_flags returns the XLB_ADDR_* flags of the packet's destination, 0
 * for an address that is not ours. */
static __always_inline __u32 dst_flags(const struct xlb_tuple *t)
{
	struct service_key key = {
		.vip = t->dst,
		.family = t->family,
	};
	__u32 *flags = bpf_map_lookup_elem(&local_addrs, &key);

	return flags ? *flags : 0;
}

/* drop_if_vip drops and counts a packet we cannot handle when it is aimed
 * at a VIP, and passes it to the kernel otherwise. A function of its own:
 * it serves many rare paths, and is verified once for all of them. */
static __noinline int drop_if_vip(const struct xlb_tuple *t, __u32 reason)
{
	if (dst_flags(t) & XLB_ADDR_VIP)
		return count_drop(reason);
	return XDP_PASS;
}

/* ip_in_frame tells whether the ip_len-byte IP packet (at pkt->l3_off)
 * lies within the frame. In a multi-buffer frame it may run on past the
 * first buffer: the frame's whole length is asked only then, for
 * pkt->len. Lengths, not packet pointers, are compared, so that the
 * verifier sees the same state whichever way the packet fits and checks
 * what follows once. */
static __always_inline bool ip_in_frame(struct xdp_md *ctx, struct pkt *pkt,
					__u32 ip_len)
{
	__u32 frame_len;

	if (pkt->l3_off + ip_len <= pkt->len)
		return true;
	if (!xlb_frags)
		return false;
	frame_len = bpf_xdp_get_buff_len(ctx);
	if (pkt->l3_off + ip_len > frame_len)
		return false;
	pkt->len = frame_len;
	return true;
}

/* header_cut names the drop of a header whose end (end) lies past the
 * first buffer: DROP_HEADER_SPLIT when the frame's other buffers hold the
 * rest of it (within the IP packet, once its length is known), else
 * reason, for a frame that is truncated. A function of its own, like
 * drop_if_vip: it serves rare paths, and keeps their stack off parse's. */
static __noinline __u32 header_cut(struct xdp_md *ctx, const struct pkt *pkt,
				   void *end, __u32 reason)
{
	__u32 off;

	if (!xlb_frags)
		return reason;
	off = end - (void *)pkt->eth;
	if (off > bpf_xdp_get_buff_len(ctx))
		return reason;
	if (pkt->ip_len && off > pkt->l3_off + pkt->ip_len)
		return reason;
	return DROP_HEADER_SPLIT;
}

static __always_inline int parse_eth(struct xdp_md *ctx, struct pkt *pkt,
				     __u16 *l3_proto, void **l3)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__be16 proto;
	void *next;

	if ((void *)(eth + 1) > data_end)
		return count_drop(DROP_ETH_TRUNCATED);
	proto = eth->h_proto;
	next = eth + 1;
	pkt->l3_off = sizeof(*eth);
	if (proto == bpf_htons(XLB_ETH_P_8021Q) ||
	    proto == bpf_htons(XLB_ETH_P_8021AD)) {
		struct vlan_hdr {
			__be16 tci;
			__be16 proto;
		} *vlan = next;

		if ((void *)(vlan + 1) > data_end)
			return count_drop(DROP_ETH_TRUNCATED);
		proto = vlan->proto;
		next = vlan + 1;
		pkt->l3_off += sizeof(*vlan);
	}
	pkt->data_end = data_end;
	pkt->eth = eth;
	pkt->len = data_end - data;
	*l3_proto = bpf_ntohs(proto);
	*l3 = next;
	return XLB_CONTINUE;
}

/* parse_l4 checks the transport header at pkt->l4 and reads its ports. */
static __always_inline int parse_l4(struct xdp_md *ctx, struct pkt *pkt)
{
	struct xlb_tuple *t = &pkt->tuple;
	void *l4 = pkt->l4;

	switch (t->proto) {
	case IPPROTO_TCP: {
		struct tcphdr *tcp = l4;
		__u32 doff;

		if ((void *)(tcp + 1) > pkt->data_end)
			return drop_if_vip(t, header_cut(ctx, pkt, tcp + 1,
							 DROP_L4_TRUNCATED));
		doff = tcp->doff * 4;
		if (doff < sizeof(*tcp))
			return drop_if_vip(t, DROP_TCP_DOFF);
		if (l4 + doff > pkt->data_end)
			return drop_if_vip(t, header_cut(ctx, pkt, l4 + doff,
							 DROP_TCP_DOFF));
		t->sport = tcp->source;
		t->dport = tcp->dest;
		pkt->tcp_flags = ((__u8 *)tcp)[13];
		return XLB_CONTINUE;
	}
	case IPPROTO_UDP: {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > pkt->data_end)
			return drop_if_vip(t, header_cut(ctx, pkt, udp + 1,
							 DROP_L4_TRUNCATED));
		if (t->family == XLB_AF_INET6 && udp->check == 0)
			return drop_if_vip(t, DROP_UDP_CSUM_ZERO);
		/* the length the checksum and the real see: no shorter
		 * than the header, no longer than the IP payload */
		if (bpf_ntohs(udp->len) < sizeof(*udp) ||
		    bpf_ntohs(udp->len) > pkt->l4_len)
			return drop_if_vip(t, DROP_UDP_LENGTH);
		pkt->l4_len = bpf_ntohs(udp->len);
		t->sport = udp->source;
		t->dport = udp->dest;
		return XLB_CONTINUE;
	}
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* type, code, checksum and 4 more bytes: what every error has
		 */
		if (l4 + 8 > pkt->data_end)
			return drop_if_vip(t, header_cut(ctx, pkt, l4 + 8,
							 DROP_L4_TRUNCATED));
		return XLB_CONTINUE;
	}
	return XDP_PASS;
}

static __always_inline int parse_ipv4(struct xdp_md *ctx, struct pkt *pkt,
				      struct iphdr *iph)
{
	struct xlb_tuple *t = &pkt->tuple;
	__u32 ihl, tot_len;

	if ((void *)(iph + 1) > pkt->data_end)
		return count_drop(
			header_cut(ctx, pkt, iph + 1, DROP_IP_TRUNCATED));
	if (iph->version != 4)
		return count_drop(DROP_IP_VERSION);
	ihl = iph->ihl * 4;
	if (ihl < sizeof(*iph))
		return count_drop(DROP_IP_IHL);
	tot_len = bpf_ntohs(iph->tot_len);
	if ((void *)iph + ihl > pkt->data_end)
		return count_drop(header_cut(ctx, pkt, (void *)iph + ihl,
					     DROP_IP_TRUNCATED));
	if (tot_len < ihl || !ip_in_frame(ctx, pkt, tot_len))
		return count_drop(DROP_IP_LENGTH);

	t->family = XLB_AF_INET;
	t->proto = iph->protocol;
	t->src.w[0] = iph->saddr;
	t->dst.w[0] = iph->daddr;
	pkt->l3 = iph;
	pkt->l4 = (void *)iph + ihl;
	pkt->ip_len = tot_len;
	pkt->l4_len = tot_len - ihl;
	pkt->l4_off = pkt->l3_off + ihl;
	if (iph->frag_off & bpf_htons(XLB_IP_MF | XLB_IP_OFFSET))
		return drop_if_vip(t, DROP_FRAGMENT);
	return parse_l4(ctx, pkt);
}

/* skippable_exthdr tells the IPv6 extension headers we step over. */
static __always_inline bool skippable_exthdr(__u8 nexthdr)
{
	return nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	       nexthdr == IPPROTO_DSTOPTS;
}

/* unsupported_exthdr tells the IPv6 extension headers (RFC 7045 list) we
 * do not handle; upper-layer protocols other than ours just pass. */
static __always_inline bool unsupported_exthdr(__u8 nexthdr)
{
	return nexthdr == IPPROTO_AH || nexthdr == 135 /* mobility */ ||
	       nexthdr == 139 /* HIP */ || nexthdr == 140 /* shim6 */ ||
	       nexthdr == 253 || nexthdr == 254 /* experiments */;
}

static __always_inline int parse_ipv6(struct xdp_md *ctx, struct pkt *pkt,
				      struct ipv6hdr *ip6h)
{
	struct xlb_tuple *t = &pkt->tuple;
	__u32 payload_len, ext_len = 0;
	__u8 nexthdr;
	void *next;
	int i;

	if ((void *)(ip6h + 1) > pkt->data_end)
		return count_drop(
			header_cut(ctx, pkt, ip6h + 1, DROP_IP_TRUNCATED));
	if (ip6h->version != 6)
		return count_drop(DROP_IP_VERSION);
	payload_len = bpf_ntohs(ip6h->payload_len);
	if (!ip_in_frame(ctx, pkt, sizeof(*ip6h) + payload_len))
		return count_drop(DROP_IP_LENGTH);
	/* 16 bits: above 65535 (a GSO packet in generic mode) is too big
	 * for any MTU all the same */
	pkt->ip_len = sizeof(*ip6h) + payload_len > 0xffff
			      ? 0xffff
			      : sizeof(*ip6h) + payload_len;

	t->family = XLB_AF_INET6;
	__builtin_memcpy(t->src.w, &ip6h->saddr, sizeof(t->src.w));
	__builtin_memcpy(t->dst.w, &ip6h->daddr, sizeof(t->dst.w));
	pkt->l3 = ip6h;
	nexthdr = ip6h->nexthdr;
	next = ip6h + 1;

#pragma unroll
	for (i = 0; i < XLB_MAX_IPV6_EXTHDRS; i++) {
		struct ipv6_opt_hdr *opt = next;

		if (!skippable_exthdr(nexthdr))
			break;
		if ((void *)(opt + 1) > pkt->data_end)
			return drop_if_vip(t, header_cut(ctx, pkt, opt + 1,
							 DROP_L4_TRUNCATED));
		nexthdr = opt->nexthdr;
		next += (opt->hdrlen + 1) * 8;
		ext_len += (opt->hdrlen + 1) * 8;
	}
	t->proto = nexthdr;
	pkt->l4 = next;
	if (ext_len > payload_len)
		return drop_if_vip(t, DROP_L4_TRUNCATED);
	pkt->l4_len = payload_len - ext_len;
	pkt->l4_off = pkt->l3_off + sizeof(*ip6h) + ext_len;
	if (nexthdr == IPPROTO_FRAGMENT)
		return drop_if_vip(t, DROP_FRAGMENT);
	if (skippable_exthdr(nexthdr) || unsupported_exthdr(nexthdr))
		return drop_if_vip(t, DROP_IPV6_EXTHDR);
	return parse_l4(ctx, pkt);
}

/* parse fills pkt from the frame, or returns the verdict for a frame that
 * is not ours (XDP_PASS) or is malformed (XDP_DROP, counted). */
static __always_inline int parse(struct xdp_md *ctx, struct pkt *pkt)
{
	__u16 l3_proto;
	void *l3;
	int ret;

	ret = parse_eth(ctx, pkt, &l3_proto, &l3);
	if (ret >= 0)
		return ret;
	if (l3_proto == XLB_ETH_P_IP)
		return parse_ipv4(ctx, pkt, l3);
	if (l3_proto == XLB_ETH_P_IPV6)
		return parse_ipv6(ctx, pkt, l3);
	return XDP_PASS;
}

#endif /* XLB_PARSE_H */
