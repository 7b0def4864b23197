//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bench lab's bare XDP forwarder, the limit of this data path: what
 * the kernel's xdp_fwd sample does. Route lookup with bpf_fib_lookup,
 * TTL/hop limit, MAC rewrite, redirect through a devmap. No state, no
 * rewriting of addresses: every figure of a balancer is a fraction of
 * this one.
 *
 * One addition, which any XDP forwarder on veth needs: a TCP/UDP segment
 * a sender on the same host handed over with a partial checksum
 * (CHECKSUM_PARTIAL, see lib/nat.h) gets its checksum completed, as xlb
 * does; else the receiver drops it, and the kernel TCP of the lab's
 * clients and servers never gets through. Frames of several buffers
 * (jumbo frames) are forwarded whole (lib/frags.h).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <stdbool.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "../lib/csum_seg.h"
#include "../lib/steer.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET	 2
#define AF_INET6 10

/* fwd_complete_csum completes the checksum of the l4_len-byte TCP/UDP
 * segment at frame offset l4_off when it is partial: the field holds the
 * folded sum of the pseudo-header, pseudo (lib/nat.h says why that test
 * is right). Returns 0, or -1 for a segment it cannot sum. */
static __noinline int fwd_complete_csum(struct xdp_md *ctx, __u32 l4_off,
					__u32 l4_len, __u32 pseudo, __u8 proto)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 field_off =
		proto == IPPROTO_TCP ? XLB_TCP_CSUM_OFF : XLB_UDP_CSUM_OFF;
	__u16 *field;

	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0;
	field = data + (l4_off & 0xfff) + field_off;
	if ((void *)(field + 1) > data_end)
		return -1;
	if (*field != csum_fold32(pseudo))
		return 0;
	*field = 0;
	return l4_csum_fill(ctx, l4_off, l4_len, pseudo, field_off);
}

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} fwd_ports SEC(".maps");

SEC("xdp.frags")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};
	__u32 l4_off, l4_len, pseudo;
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
		l4_off = sizeof(*eth) + ip->ihl * 4;
		/* not fib.tot_len: the lookup wrote the MTU over it */
		l4_len = bpf_ntohs(ip->tot_len) - ip->ihl * 4;
		pseudo = csum_add_word32(0, ip->saddr);
		pseudo = csum_add_word32(pseudo, ip->daddr);
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
		l4_off = sizeof(*eth) + sizeof(*ip6);
		l4_len = bpf_ntohs(ip6->payload_len);
		pseudo = 0;
		for (int i = 0; i < 4; i++) {
			pseudo = csum_add_word32(pseudo,
						 ip6->saddr.in6_u.u6_addr32[i]);
			pseudo = csum_add_word32(pseudo,
						 ip6->daddr.in6_u.u6_addr32[i]);
		}
	} else {
		return XDP_PASS;
	}
	pseudo += bpf_htons(fib.l4_protocol) + bpf_htons(l4_len);
	if (fwd_complete_csum(ctx, l4_off, l4_len, pseudo, fib.l4_protocol))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect_map(&fwd_ports, fib.ifindex, XDP_PASS);
}

/* The least an XDP hop can cost: the next hop is fixed per ingress
 * port (the egress port and both MACs), so a frame costs a map lookup,
 * the MAC rewrite and the devmap redirect. No route lookup, no TTL, no
 * checksum: it forwards only frames whose checksums are complete (the
 * frame scenarios' generator), not a local sender's partial ones. */
struct fwd_next_hop {
	__u32 ifindex; /* egress, also a key of fwd_ports */
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32); /* ingress ifindex */
	__type(value, struct fwd_next_hop);
} fwd_next SEC(".maps");

SEC("xdp.frags")
int xdp_fwd_fixed(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 in = ctx->ingress_ifindex;
	struct fwd_next_hop *nh;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	nh = bpf_map_lookup_elem(&fwd_next, &in);
	if (!nh)
		return XDP_PASS;
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	return bpf_redirect_map(&fwd_ports, nh->ifindex, XDP_PASS);
}

/* xdp_fwd_steer gives the forwarders workers as xlb's (lib/steer.h): the
 * interfaces run it, and each worker CPU runs xdp_fwd or xdp_fwd_fixed
 * as its cpumap program. */
SEC("xdp.frags")
int xdp_fwd_steer(struct xdp_md *ctx)
{
	return steer(ctx);
}
