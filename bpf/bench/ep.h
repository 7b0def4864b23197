/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The XDP TCP endpoints' packet helpers: parsing one IPv4 TCP or UDP
 * segment, writing a whole segment from scratch (every header byte, so a
 * recycled live-frames page holds nothing stale), checksums and the
 * latency histogram. The endpoints send only what they write here:
 * IPv4 without options, TCP without options, payloads of zero bytes
 * (which add nothing to a checksum).
 */
#ifndef XLB_BENCH_EP_H
#define XLB_BENCH_EP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define EP_IP_OFF	14
#define EP_L4_OFF	(EP_IP_OFF + 20)
#define EP_TCP_HDRS	(EP_L4_OFF + 20) /* Ethernet, IPv4, TCP: 54 bytes */
#define EP_UDP_HDRS	(EP_L4_OFF + 8)
#define EP_MAX_PAYLOAD	1460 /* the MSS of a 1500-byte MTU */
#define EP_TTL		64
#define EP_WINDOW	65535
#define EP_IP_DF	0x4000
#define EP_HIST_SUB	64 /* sub-buckets per power of two: 1.6% resolution */
#define EP_HIST_BUCKETS (EP_HIST_SUB + 32 * EP_HIST_SUB)

/* TCP flags, as in byte 13 of the TCP header */
#define EP_FIN 0x01
#define EP_SYN 0x02
#define EP_RST 0x04
#define EP_PSH 0x08
#define EP_ACK 0x10

/* ep_zeros is every payload: zero bytes add nothing to a checksum. */
static __u8 ep_zeros[EP_MAX_PAYLOAD];

/* struct ep_tuple is the addresses of one direction of a flow. */
struct ep_tuple {
	__u8 smac[ETH_ALEN];
	__u8 dmac[ETH_ALEN];
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
};

/* struct ep_seg is a parsed IPv4 TCP or UDP segment. */
struct ep_seg {
	struct ep_tuple t; /* as received */
	__u8 proto;	   /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 flags;	   /* TCP flags */
	__u32 seq;	   /* TCP, host order */
	__u32 ack;
	__u32 payload_len;
};

/* ep_parse reads an IPv4 TCP or UDP segment without IP options or
 * fragments. It returns 0, or -1 for anything else (left to the kernel).
 */
static __always_inline int ep_parse(void *data, void *data_end,
				    struct ep_seg *s)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = data + EP_IP_OFF;
	__u32 l3_len, l4_hdr;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return -1;
	l3_len = bpf_ntohs(ip->tot_len);
	if (data + EP_IP_OFF + l3_len > data_end)
		return -1;
	__builtin_memcpy(s->t.smac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(s->t.dmac, eth->h_dest, ETH_ALEN);
	s->t.saddr = ip->saddr;
	s->t.daddr = ip->daddr;
	s->proto = ip->protocol;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = data + EP_L4_OFF;

		if ((void *)(tcp + 1) > data_end)
			return -1;
		l4_hdr = tcp->doff * 4;
		if (l4_hdr < 20 || 20 + l4_hdr > l3_len)
			return -1;
		s->t.sport = tcp->source;
		s->t.dport = tcp->dest;
		s->flags = ((__u8 *)tcp)[13];
		s->seq = bpf_ntohl(tcp->seq);
		s->ack = bpf_ntohl(tcp->ack_seq);
		s->payload_len = l3_len - 20 - l4_hdr;
		return 0;
	}
	if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = data + EP_L4_OFF;

		if ((void *)(udp + 1) > data_end || l3_len < 28)
			return -1;
		s->t.sport = udp->source;
		s->t.dport = udp->dest;
		s->payload_len = l3_len - 28;
		return 0;
	}
	return -1;
}

/* ep_reverse returns the tuple of the answer to s. */
static __always_inline void ep_reverse(const struct ep_seg *s,
				       struct ep_tuple *r)
{
	__builtin_memcpy(r->smac, s->t.dmac, ETH_ALEN);
	__builtin_memcpy(r->dmac, s->t.smac, ETH_ALEN);
	r->saddr = s->t.daddr;
	r->daddr = s->t.saddr;
	r->sport = s->t.dport;
	r->dport = s->t.sport;
}

static __always_inline __u16 ep_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* ep_sum adds n 16-bit words at p (n is a constant: unrolled). */
static __always_inline __u32 ep_sum(const __u16 *p, int n)
{
	__u32 sum = 0;

	for (int i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

/* ep_set_len makes the frame exactly len bytes long. */
static __always_inline int ep_set_len(struct xdp_md *ctx, __u32 len)
{
	int delta = (int)len - (int)(ctx->data_end - ctx->data);

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	return 0;
}

/* ep_write_ip writes the Ethernet and IPv4 headers of a frame of
 * EP_L4_OFF + l4_len bytes. */
static __always_inline void ep_write_ip(void *data, const struct ep_tuple *t,
					__u8 proto, __u32 l4_len)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = data + EP_IP_OFF;

	__builtin_memcpy(eth->h_dest, t->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, t->smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = bpf_htons(20 + l4_len);
	ip->id = 0;
	ip->frag_off = bpf_htons(EP_IP_DF);
	ip->ttl = EP_TTL;
	ip->protocol = proto;
	ip->check = 0;
	ip->saddr = t->saddr;
	ip->daddr = t->daddr;
	ip->check = ep_fold(ep_sum((__u16 *)ip, 10));
}

/* ep_pseudo is the pseudo-header sum of an IPv4 L4 checksum. */
static __always_inline __u32 ep_pseudo(const struct ep_tuple *t, __u8 proto,
				       __u32 l4_len)
{
	return (t->saddr >> 16) + (t->saddr & 0xffff) + (t->daddr >> 16) +
	       (t->daddr & 0xffff) + bpf_htons(proto) + bpf_htons(l4_len);
}

/* ep_write_tcp makes the frame a TCP segment from scratch: headers,
 * flags, sequence numbers and payload_len zero bytes. */
static __always_inline int ep_write_tcp(struct xdp_md *ctx,
					const struct ep_tuple *t, __u32 seq,
					__u32 ack, __u8 flags,
					__u32 payload_len)
{
	void *data, *data_end;
	struct tcphdr *tcp;

	if (payload_len > EP_MAX_PAYLOAD ||
	    ep_set_len(ctx, EP_TCP_HDRS + payload_len))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	tcp = data + EP_L4_OFF;
	if ((void *)(tcp + 1) > data_end)
		return -1;
	ep_write_ip(data, t, IPPROTO_TCP, 20 + payload_len);
	tcp->source = t->sport;
	tcp->dest = t->dport;
	tcp->seq = bpf_htonl(seq);
	tcp->ack_seq = bpf_htonl(ack);
	((__u16 *)tcp)[6] = 0;
	tcp->doff = 5;
	((__u8 *)tcp)[13] = flags;
	tcp->window = bpf_htons(EP_WINDOW);
	tcp->check = 0;
	tcp->urg_ptr = 0;
	tcp->check = ep_fold(ep_sum((__u16 *)tcp, 10) +
			     ep_pseudo(t, IPPROTO_TCP, 20 + payload_len));
	if (payload_len > 0 &&
	    bpf_xdp_store_bytes(ctx, EP_TCP_HDRS, ep_zeros, payload_len))
		return -1;
	return 0;
}

/* ep_write_udp makes the frame a UDP datagram of payload_len zero bytes
 * from scratch. */
static __always_inline int
ep_write_udp(struct xdp_md *ctx, const struct ep_tuple *t, __u32 payload_len)
{
	void *data, *data_end;
	struct udphdr *udp;
	__u16 csum;

	if (payload_len > EP_MAX_PAYLOAD ||
	    ep_set_len(ctx, EP_UDP_HDRS + payload_len))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	udp = data + EP_L4_OFF;
	if ((void *)(udp + 1) > data_end)
		return -1;
	ep_write_ip(data, t, IPPROTO_UDP, 8 + payload_len);
	udp->source = t->sport;
	udp->dest = t->dport;
	udp->len = bpf_htons(8 + payload_len);
	udp->check = 0;
	csum = ep_fold(ep_sum((__u16 *)udp, 4) +
		       ep_pseudo(t, IPPROTO_UDP, 8 + payload_len));
	udp->check = csum ? csum : 0xffff; /* 0 would mean "no checksum" */
	if (payload_len > 0 &&
	    bpf_xdp_store_bytes(ctx, EP_UDP_HDRS, ep_zeros, payload_len))
		return -1;
	return 0;
}

static __always_inline __u32 ep_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* ep_hist_bucket is the histogram bucket of ns nanoseconds: exact below
 * 64 ns, then 64 buckets per power of two (the Go side mirrors it). */
static __always_inline __u32 ep_hist_bucket(__u64 ns)
{
	__u32 e, b;

	if (ns < EP_HIST_SUB)
		return ns;
	e = ep_log2(ns) - 6; /* ns >> e is in [64, 128) */
	b = EP_HIST_SUB + e * EP_HIST_SUB + (__u32)(ns >> e) - EP_HIST_SUB;
	return b < EP_HIST_BUCKETS ? b : EP_HIST_BUCKETS - 1;
}

#endif /* XLB_BENCH_EP_H */
