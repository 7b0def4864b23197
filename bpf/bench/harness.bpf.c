//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-packet cost harness for BPF_PROG_RUN. With repeat > 1 the kernel
 * runs a program again and again on the same buffer, so a NAT would see
 * its own output from the second run on. This harness restores the frame
 * from a template before every run, optionally writes the address and
 * port of the next of many flows into it, and tail-calls the program
 * under test. The baseline is measured through the same harness.
 */
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "../lib/frags.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define HARNESS_FRAME_MAX 128 /* template bytes restored per run */
#define HARNESS_FLOWS_MAX (1 << 20)

struct harness_cfg {
	__u32 len;	  /* template length, a multiple of 8 */
	__u32 nflows;	  /* flows rotated through; 0 = none */
	__u32 addr_off;	  /* where a flow's IPv4 address goes */
	__u32 port_off;	  /* where a flow's port goes */
	__u32 sequential; /* 1: run i gets address seq_base + i: every run new */
	__u32 seq_base;	  /* host order */
	/* where a CHECKSUM_PARTIAL checksum lies (0: none): it holds the
	 * folded pseudo-header sum, so it follows the flow's address */
	__u32 partial_off;
	__u8 frame[HARNESS_FRAME_MAX];
};

struct harness_flow {
	__be32 addr;
	__be16 port;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct harness_cfg);
} harness_config SEC(".maps");

/* the flows rotated through, written by Go */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HARNESS_FLOWS_MAX);
	__type(key, __u32);
	__type(value, struct harness_flow);
} harness_flows SEC(".maps");

/* per-CPU run counter: which flow comes next */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} harness_seq SEC(".maps");

/* slot 0: the program under test */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} harness_target SEC(".maps");

/* xdp.frags, as xlb's program: a tail call joins programs of one kind
 * only (lib/frags.h) */
SEC("xdp.frags")
int harness(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct harness_flow *flow, seqflow;
	struct harness_cfg *cfg;
	__u32 zero = 0, idx, *seq;
	int i;

	cfg = bpf_map_lookup_elem(&harness_config, &zero);
	seq = bpf_map_lookup_elem(&harness_seq, &zero);
	if (!cfg || !seq || data + HARNESS_FRAME_MAX > data_end)
		return XDP_ABORTED;
#pragma unroll
	for (i = 0; i < HARNESS_FRAME_MAX; i += 8)
		if (i < cfg->len)
			*(__u64 *)(data + i) = *(__u64 *)(cfg->frame + i);

	if (cfg->nflows) {
		idx = *seq % cfg->nflows;
		*seq += 1;
		if (cfg->sequential) {
			seqflow.addr = bpf_htonl(cfg->seq_base + idx);
			seqflow.port = *(__be16 *)(cfg->frame +
						   (cfg->port_off & 0x7e));
			flow = &seqflow;
		} else {
			flow = bpf_map_lookup_elem(&harness_flows, &idx);
			if (!flow)
				return XDP_ABORTED;
		}
		void *addr = data + (cfg->addr_off & 0x7f);
		void *port = data + (cfg->port_off & 0x7f);

		if (addr + 4 > data_end || port + 2 > data_end)
			return XDP_ABORTED;
		__builtin_memcpy(addr, &flow->addr, 4);
		__builtin_memcpy(port, &flow->port, 2);
		if (cfg->partial_off) {
			__u16 *csum = data + (cfg->partial_off & 0x7e);
			__u16 *old =
				(void *)cfg->frame + (cfg->addr_off & 0x7c);
			__u16 *new = (void *)&flow->addr;
			__u32 sum;

			if ((void *)(csum + 1) > data_end)
				return XDP_ABORTED;
			/* the pseudo-header sum with the old address taken
			 * out and the new one put in (RFC 1624) */
			sum = *csum + (__u16)~old[0] + (__u16)~old[1] + new[0] +
			      new[1];
			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			*csum = sum;
		}
	}
	bpf_tail_call(ctx, &harness_target, 0);
	return XDP_ABORTED;
}
