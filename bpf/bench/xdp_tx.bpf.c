//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The baseline of the per-packet cost benchmark: the least an XDP program
 * that sends a packet back out can do (check the Ethernet header, swap the
 * MACs, XDP_TX). xlb's costs are reported as multiples of this one,
 * measured in the same run.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "../lib/frags.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* xdp.frags, as xlb's program: a tail call joins programs of one kind
 * only (lib/frags.h) */
SEC("xdp.frags")
int xdp_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return XDP_TX;
}
