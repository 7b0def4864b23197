//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bench lab's bare XDP forwarder, the limit of this data path: what
 * the kernel's xdp_fwd sample does. Route lookup with bpf_fib_lookup,
 * TTL/hop limit, MAC rewrite, redirect through a devmap. No state, no
 * rewriting of addresses: every figure of a balancer is a fraction of
 * this one.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET	 2
#define AF_INET6 10

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} fwd_ports SEC(".maps");

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};
	int rc;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	fib.ifindex = ctx->ingress_ifindex;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 sum;

		if ((void *)(ip + 1) > data_end)
			return XDP_DROP;
		if (ip->ttl <= 1)
			return XDP_PASS;
		fib.family = AF_INET;
		fib.tos = ip->tos;
		fib.l4_protocol = ip->protocol;
		fib.tot_len = bpf_ntohs(ip->tot_len);
		fib.ipv4_src = ip->saddr;
		fib.ipv4_dst = ip->daddr;
		rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS)
			return XDP_PASS;
		/* TTL - 1: the checksum's high byte gains one (RFC 1624) */
		sum = ip->check + bpf_htons(0x0100);
		ip->check = sum + (sum >= 0xffff);
		ip->ttl--;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		if (ip6->hop_limit <= 1)
			return XDP_PASS;
		fib.family = AF_INET6;
		fib.l4_protocol = ip6->nexthdr;
		fib.tot_len = bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr,
				 sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr,
				 sizeof(fib.ipv6_dst));
		rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS)
			return XDP_PASS;
		ip6->hop_limit--;
	} else {
		return XDP_PASS;
	}
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect_map(&fwd_ports, fib.ifindex, XDP_PASS);
}
