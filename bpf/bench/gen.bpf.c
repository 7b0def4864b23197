//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Traffic generator of the bench lab. Go runs it with BPF_PROG_RUN in
 * live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES) on the client's
 * interface: every run writes the next frame and returns XDP_TX, which
 * sends it out of that interface.
 *
 * Live frames come from a page pool, and a recycled page holds whatever
 * the last program that touched it wrote (the balancer rewrites headers
 * in place), so each run restores the whole header from the template,
 * then writes the flow's fields and fixes the checksums incrementally.
 *
 * IMIX: the frames cycle through GEN_IMIX_SIZES templates of different
 * lengths, 7:4:1 of 64, 570 and 1518 bytes in every GEN_IMIX_CYCLE. The frame is set to the template's length with adjust_tail
 * (a recycled page keeps the length its last run left, so the delta is
 * taken from the frame as it is); past the template's header the payload
 * is zeros, which a grown tail is, so the checksums Go computed hold.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "../lib/csum.h"
#include "pace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GEN_HDR_MAX    96 /* template bytes restored per run */
#define GEN_IMIX_SIZES 3  /* IMIX frame lengths */
#define GEN_IMIX_CYCLE 12

/* gen_config.vary: which fields change from flow to flow */
enum gen_vary {
	GEN_VARY_SMAC = 1 << 0,
	GEN_VARY_DMAC = 1 << 1,
	GEN_VARY_SIP = 1 << 2,
	GEN_VARY_DIP = 1 << 3,
	GEN_VARY_SPORT = 1 << 4,
	GEN_VARY_DPORT = 1 << 5,
};

struct gen_cfg {
	__u32 flows;	   /* flows rotated through, >= 1 */
	__u32 vary;	   /* enum gen_vary bits */
	__u16 hdr_len;	   /* template bytes to restore, a multiple of 8 */
	__u16 ip_off;	   /* offset of the IP header */
	__u16 l4_off;	   /* offset of the TCP/UDP header */
	__u16 l4_csum_off; /* offset of the L4 checksum (0: IPv4 UDP without) */
	__u8 ipv6;	   /* 1: IPv6 */
	__u8 imix_on;	   /* 1: the frames cycle through imix[] */
	__u8 stamp;	   /* 1: each frame carries its send time */
	__u8 pad;
	__u16 stamp_off; /* where: 8 bytes after the magic, in the template */
	__u8 pad2[2];
	__u8 hdr[GEN_HDR_MAX]; /* Ethernet, IP, L4 headers, payload start */
	struct gen_imix_frame {
		__u16 len;     /* frame bytes (without FCS) */
		__u16 hdr_len; /* template bytes to restore, a multiple of 8 */
		__u8 pad[4];
		__u8 hdr[GEN_HDR_MAX];
	} imix[GEN_IMIX_SIZES];
};

/* The IMIX cycle: place 6 takes imix[2], places 1, 4, 8 and 10 take
 * imix[1] (the bits of GEN_IMIX_SECOND), the other seven imix[0]; a
 * table would be a map lookup the verifier cannot bound. */
#define GEN_IMIX_THIRD	6
#define GEN_IMIX_SECOND ((1 << 1) | (1 << 4) | (1 << 8) | (1 << 10))

struct gen_counters {
	__u64 packets;
	__u64 bytes;
};

volatile struct gen_cfg gen_config;

/* per-CPU sender state: the pacing (pace.h) and the next flow */
struct gen_state {
	struct pace pace;
	__u32 flow; /* the next flow */
	__u32 seq;  /* the next frame's place in the IMIX cycle */
	struct gen_counters sent;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} gen_states SEC(".maps");

/* add flow to the 32-bit big-endian field at p, fixing the checksums at
 * c1 and c2 (either may be NULL) */
static __always_inline void vary32(__be32 *p, __u32 flow, __u16 *c1, __u16 *c2)
{
	__be32 old = *p;
	__be32 new = bpf_htonl(bpf_ntohl(old) + flow);
	struct csum_delta d = {};

	*p = new;
	csum_delta_add32(&d, old, new);
	if (c1)
		*c1 = csum_apply(*c1, &d);
	if (c2)
		*c2 = csum_apply(*c2, &d);
}

static __always_inline void vary16(__be16 *p, __u32 flow, __u16 *c)
{
	__be16 old = *p;
	__be16 new = bpf_htons(bpf_ntohs(old) + (__u16)flow);
	struct csum_delta d = {};

	*p = new;
	csum_delta_add16(&d, old, new);
	if (c)
		*c = csum_apply(*c, &d);
}

/* the low three bytes of a MAC address count flows */
static __always_inline void vary_mac(__u8 *mac, __u32 flow)
{
	__u32 low = ((__u32)mac[3] << 16 | (__u32)mac[4] << 8 | mac[5]) + flow;

	mac[3] = low >> 16;
	mac[4] = low >> 8;
	mac[5] = low;
}

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0, flow, vary = gen_config.vary;
	struct gen_state *st = bpf_map_lookup_elem(&gen_states, &zero);
	__u16 *l4csum = NULL;
	__u16 ip_off = gen_config.ip_off, l4_off = gen_config.l4_off,
	      csum_off = gen_config.l4_csum_off;

	if (!st)
		return XDP_ABORTED;
	if (!pace_due(&st->pace))
		return XDP_DROP;
	if (gen_config.imix_on) {
		/* not seq % GEN_IMIX_CYCLE: the verifier cannot bound the
		 * multiply the compiler makes of it */
		__u32 k = st->seq < GEN_IMIX_CYCLE ? st->seq : 0, i;
		volatile struct gen_imix_frame *f;

		st->seq = k + 1;
		i = k == GEN_IMIX_THIRD ? 2 : (GEN_IMIX_SECOND >> k) & 1;
		f = &gen_config.imix[i];
		if (bpf_xdp_adjust_tail(ctx,
					(int)f->len - (int)(data_end - data)))
			return XDP_ABORTED;
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
		for (int off = 0; off < GEN_HDR_MAX; off += 8) {
			if (off >= f->hdr_len || data + off + 8 > data_end)
				break;
			*(__u64 *)(data + off) = *(__u64 *)&f->hdr[off];
		}
	} else {
		for (int off = 0; off < GEN_HDR_MAX; off += 8) {
			if (off >= gen_config.hdr_len ||
			    data + off + 8 > data_end)
				break;
			*(__u64 *)(data + off) = *(__u64 *)&gen_config.hdr[off];
		}
	}

	flow = st->flow;
	st->flow = flow + 1 >= gen_config.flows ? 0 : flow + 1;
	if (flow && vary) {
		struct ethhdr *eth = data;
		struct udphdr *ports; /* TCP starts with the same two ports */

		/* offsets come from Go, which keeps them inside the template */
		if (ip_off > 32 || l4_off > 80 || csum_off > 88 ||
		    (void *)(eth + 1) > data_end)
			return XDP_ABORTED;
		if (csum_off && data + csum_off + 2 <= data_end)
			l4csum = data + csum_off;
		if (vary & GEN_VARY_SMAC)
			vary_mac(eth->h_source, flow);
		if (vary & GEN_VARY_DMAC)
			vary_mac(eth->h_dest, flow);
		if (gen_config.ipv6) {
			struct ipv6hdr *ip6 = data + ip_off;

			/* the last word of each address */
			if ((void *)(ip6 + 1) > data_end)
				return XDP_ABORTED;
			if (vary & GEN_VARY_SIP)
				vary32(&ip6->saddr.in6_u.u6_addr32[3], flow,
				       l4csum, NULL);
			if (vary & GEN_VARY_DIP)
				vary32(&ip6->daddr.in6_u.u6_addr32[3], flow,
				       l4csum, NULL);
		} else {
			struct iphdr *iph = data + ip_off;

			if ((void *)(iph + 1) > data_end)
				return XDP_ABORTED;
			if (vary & GEN_VARY_SIP)
				vary32(&iph->saddr, flow, &iph->check, l4csum);
			if (vary & GEN_VARY_DIP)
				vary32(&iph->daddr, flow, &iph->check, l4csum);
		}
		ports = data + l4_off;
		if ((void *)(ports + 1) > data_end)
			return XDP_ABORTED;
		if (vary & GEN_VARY_SPORT)
			vary16(&ports->source, flow, l4csum);
		if (vary & GEN_VARY_DPORT)
			vary16(&ports->dest, flow, l4csum);
	}
	if (gen_config.stamp) {
		/* the send time, big-endian, where the template has zeros;
		 * the sink takes it from its own clock on arrival */
		__u16 so = gen_config.stamp_off, co = csum_off;
		__u64 now = bpf_ktime_get_ns();
		struct csum_delta d = {};
		__be32 *ts;

		if (so > GEN_HDR_MAX - 8 || co > GEN_HDR_MAX - 2)
			return XDP_ABORTED;
		ts = data + so;
		if ((void *)(ts + 2) > data_end)
			return XDP_ABORTED;
		csum_delta_add32(&d, ts[0], bpf_htonl(now >> 32));
		csum_delta_add32(&d, ts[1], bpf_htonl((__u32)now));
		ts[0] = bpf_htonl(now >> 32);
		ts[1] = bpf_htonl((__u32)now);
		if (co && data + co + 2 <= data_end) {
			__u16 *c = data + co;

			*c = csum_apply(*c, &d);
		}
	}
	st->sent.packets++;
	st->sent.bytes += data_end - data;
	return XDP_TX;
}
