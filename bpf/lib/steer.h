/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Workers: receive-side scaling in software. On an interface with fewer
 * receive queues than the CPUs that should balance (veth, a VM's single
 * queue NIC), XDP runs on the CPU that received the frame. The steering
 * program attached there instead hashes each frame's flow, as a NIC's RSS
 * does, and redirects it through a cpumap to one of the worker CPUs,
 * whose cpumap entry runs the balancer's program. A flow stays on one
 * worker; a fragmented datagram, whose later fragments have no ports, is
 * hashed on its addresses alone so that its fragments stay together.
 *
 * Nothing here is pinned: the steering program holds its maps, a pinned
 * link holds the program, and the next daemon replaces all three.
 */
#ifndef XLB_STEER_H
#define XLB_STEER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <stdbool.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "hash.h"

#define XLB_MAX_WORKERS 64 /* worker CPUs a steering program spreads over */

/* steer_set is the worker CPUs, in the order flows are spread over them. */
struct steer_set {
	__u32 count;
	__u32 cpu[XLB_MAX_WORKERS];
};

/* key 0: the worker set (count 0 steers nothing: XDP_PASS) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steer_set);
} steer_workers SEC(".maps");

/* CPU -> its queue and the program it runs. The loader sizes it to the
 * possible CPUs; only the workers' entries are set. */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} steer_cpus SEC(".maps");

/* steer_ports reads the transport ports at l4, or 0 past the frame. */
static __always_inline __u32 steer_ports(void *l4, void *data_end)
{
	__u32 *ports = l4;

	if ((void *)(ports + 1) > data_end)
		return 0;
	return *ports;
}

static __always_inline bool steer_has_ports(__u8 proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP ||
	       proto == IPPROTO_SCTP;
}

/* steer_hash hashes the frame's flow: addresses, protocol and ports (no
 * ports for a fragment or an IPv6 extension header). Frames of no IP
 * flow hash to 0. */
static __always_inline __u32 steer_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 ports = 0;

	if ((void *)(eth + 1) > data_end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return 0;
		/* neither more fragments nor an offset: a whole datagram */
		if (!(ip->frag_off & bpf_htons(0x3fff)) &&
		    steer_has_ports(ip->protocol))
			ports = steer_ports((void *)ip + ip->ihl * 4, data_end);
		return jhash_3words(ip->saddr, ip->daddr, ports ^ ip->protocol,
				    XLB_HASH_SEED);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u32 *s, *d;

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		s = ip6->saddr.in6_u.u6_addr32;
		d = ip6->daddr.in6_u.u6_addr32;
		if (steer_has_ports(ip6->nexthdr))
			ports = steer_ports(ip6 + 1, data_end);
		return jhash_3words(s[0] ^ s[1] ^ s[2] ^ s[3],
				    d[0] ^ d[1] ^ d[2] ^ d[3],
				    ports ^ ip6->nexthdr, XLB_HASH_SEED);
	}
	return 0;
}

/* steer redirects the frame to its flow's worker. A worker whose cpumap
 * entry is missing (the loader sets every one before it attaches) leaves
 * the frame to the kernel. */
static __always_inline int steer(struct xdp_md *ctx)
{
	__u32 key = 0, slot;
	struct steer_set *set = bpf_map_lookup_elem(&steer_workers, &key);

	if (!set || !set->count || set->count > XLB_MAX_WORKERS)
		return XDP_PASS;
	slot = steer_hash(ctx) % set->count;
	/* the compiler knows slot < count <= 64 and drops a mask the
	 * verifier, which does not follow the modulo, needs */
	asm volatile("" : "+r"(slot));
	slot &= XLB_MAX_WORKERS - 1;
	return bpf_redirect_map(&steer_cpus, set->cpu[slot], XDP_PASS);
}

#endif /* XLB_STEER_H */
