//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Traffic sink of the bench lab: attached to every receiving interface,
 * it counts the generator's frames (those whose payload starts with the
 * bench magic) and drops everything it counts. Other frames (ARP,
 * neighbour discovery) pass to the kernel and are counted apart. The
 * headers are read from a frame's first buffer.
 *
 * In reflect mode (sink_cfg) it sends each bench frame back where it
 * came from instead, MACs and IP addresses swapped, by a redirect to its
 * ingress interface, as a DUT that answers every frame does: the
 * synflood scenario measures with it what answering costs the lab
 * besides the DUT's own work.
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

/* sink_cfg[0]: 1 reflects bench frames, 0 drops them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sink_cfg SEC(".maps");

/* reflect swaps a frame's MACs and IP addresses (checksums keep: the
 * sums are the same) and redirects it to its ingress interface. */
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
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct in6_addr a;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
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
	__u32 *mode = bpf_map_lookup_elem(&sink_cfg, &zero);

	if (mode && *mode)
		return reflect(ctx, data, data_end);
	return XDP_DROP;
}
