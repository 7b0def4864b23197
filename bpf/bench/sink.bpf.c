//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Traffic sink of the bench lab: attached to every receiving interface,
 * it counts the generator's frames (those whose payload starts with the
 * bench magic) and drops everything it counts. Other frames (ARP,
 * neighbour discovery) pass to the kernel and are counted apart. The
 * headers are read from a frame's first buffer.
 *
 * With latency on (sink_cfg's timed) it reads the send time the generator
 * wrote after the magic and counts the frame's time from the
 * generator's XDP_TX to here in a log-linear histogram (sink_latency):
 * 16 buckets for each power of two, a bucket within 6% of its values.
 *
 * In reflect mode (sink_cfg's reflect) it sends each bench frame back where it
 * came from instead, MACs, IP addresses and TCP/UDP ports swapped, by a
 * redirect to its ingress interface: as a DUT that answers every frame
 * does (the synflood scenario measures with it what answering costs the
 * lab besides the DUT's own work), or as a server that answers every
 * request (the pps scenario's traffic in both directions).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "../lib/frags.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SINK_MAGIC 0x584c4247 /* "XLBG", first payload bytes of bench frames */

struct sink_counters {
	__u64 packets; /* bench frames, dropped here */
	__u64 bytes;
	__u64 other; /* anything else, passed */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_counters);
} sink_stats SEC(".maps");

/* what the sinks do with bench frames besides counting them */
struct sink_config {
	__u32 reflect; /* 1: send them back (reflect mode), 0: drop them */
	__u32 timed;   /* 1: count their latency */
};

/* key 0: the configuration, read once a frame */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_config);
} sink_cfg SEC(".maps");

#define SINK_LAT_BUCKETS 480 /* 16 a power of two, to 2^33 ns */

struct sink_latency {
	__u64 count; /* frames timed */
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u32 buckets[SINK_LAT_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_latency);
} sink_lat SEC(".maps");

/* lat_bucket is ns's bucket: ns itself below 16, else 16 a power of two
 * by the four bits below the leading one */
static __always_inline __u32 lat_bucket(__u64 ns)
{
	__u64 v = ns;
	__u32 e = 0, b;

	if (ns < 16)
		return ns;
	if (v >> 32) {
		e += 32;
		v >>= 32;
	}
	if (v >> 16) {
		e += 16;
		v >>= 16;
	}
	if (v >> 8) {
		e += 8;
		v >>= 8;
	}
	if (v >> 4) {
		e += 4;
		v >>= 4;
	}
	if (v >> 2) {
		e += 2;
		v >>= 2;
	}
	if (v >> 1)
		e += 1;
	b = (e - 3) * 16 + ((ns >> (e - 4)) & 15);
	return b < SINK_LAT_BUCKETS ? b : SINK_LAT_BUCKETS - 1;
}

/* time_frame counts the time since the send time at ts */
static __always_inline void time_frame(__be32 *ts, void *data_end)
{
	__u32 zero = 0, b;
	struct sink_latency *l = bpf_map_lookup_elem(&sink_lat, &zero);
	__u64 sent, now = bpf_ktime_get_ns(), ns;

	if (!l || (void *)(ts + 2) > data_end)
		return;
	sent = (__u64)bpf_ntohl(ts[0]) << 32 | bpf_ntohl(ts[1]);
	if (!sent || sent > now)
		return;
	ns = now - sent;
	if (!l->count || ns < l->min_ns)
		l->min_ns = ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
	l->count++;
	l->sum_ns += ns;
	b = lat_bucket(ns);
	if (b < SINK_LAT_BUCKETS)
		l->buckets[b]++;
}

/* swap_ports swaps the TCP or UDP ports at l4 */
static __always_inline void swap_ports(void *l4, __u8 proto, void *data_end)
{
	__be16 *ports = l4, p;

	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return;
	if ((void *)(ports + 2) > data_end)
		return;
	p = ports[0];
	ports[0] = ports[1];
	ports[1] = p;
}

/* reflect swaps a frame's MACs, IP addresses and ports (checksums keep:
 * the sums are the same) and redirects it to its ingress interface. */
static __always_inline int reflect(struct xdp_md *ctx, void *data,
				   void *data_end)
{
	struct ethhdr *eth = data;
	__u8 mac[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__be32 a;

		if ((void *)(ip + 1) > data_end)
			return XDP_DROP;
		a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		if (ip->ihl == 5)
			swap_ports(ip + 1, ip->protocol, data_end);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct in6_addr a;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		swap_ports(ip6 + 1, ip6->nexthdr, data_end);
	}
	return bpf_redirect(ctx->ingress_ifindex, 0);
}

/* payload returns where the TCP/UDP payload of a frame starts, or NULL */
static __always_inline void *payload(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	void *l4;
	__u8 proto;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
			return NULL;
		proto = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return NULL;
		proto = ip6->nexthdr;
		l4 = ip6 + 1;
	} else {
		return NULL;
	}
	if (proto == IPPROTO_UDP)
		return l4 + sizeof(struct udphdr);
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return NULL;
		return l4 + th->doff * 4;
	}
	return NULL;
}

/* xdp.frags: jumbo frames arrive in several buffers (lib/frags.h) */
SEC("xdp.frags")
int xdp_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct sink_counters *c = bpf_map_lookup_elem(&sink_stats, &zero);
	__be32 *magic = payload(data, data_end);

	if (!c)
		return XDP_PASS;
	if (!magic || (void *)(magic + 1) > data_end ||
	    *magic != bpf_htonl(SINK_MAGIC)) {
		c->other++;
		return XDP_PASS;
	}
	c->packets++;
	c->bytes += xlb_frags ? bpf_xdp_get_buff_len(ctx) : data_end - data;
	struct sink_config *cfg = bpf_map_lookup_elem(&sink_cfg, &zero);

	if (!cfg)
		return XDP_DROP;
	if (cfg->timed)
		time_frame(magic + 1, data_end);
	if (cfg->reflect)
		return reflect(ctx, data, data_end);
	return XDP_DROP;
}
