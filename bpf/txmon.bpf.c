//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * txmon: makes visible the frames the kernel loses after an XDP redirect.
 *
 * bpf_redirect_map only queues a frame; the devmap flush at the end of the
 * NAPI poll hands the batch to the target driver's ndo_xdp_xmit, and what
 * the driver refuses is freed without a trace in any interface counter.
 * A veth whose peer has neither a native XDP program nor GRO on takes no
 * frame: since kernel 6.3 the redirect itself fails (the veth does not
 * advertise NDO_XMIT: xdp_redirect_err, -EOPNOTSUPP), before that the
 * flush does (veth_xdp_xmit returns -ENXIO: xdp_devmap_xmit). The xdp
 * tracepoints report both, and these programs count them:
 *
 *   xdp/xdp_devmap_xmit       one event per flushed batch: sent, drops, err
 *   xdp/xdp_redirect_err      a redirect that failed before queueing
 *   xdp/xdp_redirect_map_err  the same, on older kernels that still have it
 *
 * Counts are per CPU (tracing programs do not nest on one CPU), no locks.
 * When filtering is on, only frames received on an interface of
 * txmon_ifindexes are counted, so other XDP users of the host are not.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* TXMON_MAX_IFACES is how many interfaces the filter can hold. */
#ifndef TXMON_MAX_IFACES
#define TXMON_MAX_IFACES 256
#endif /* TXMON_MAX_IFACES */

/* Counter indexes of txmon_counters. */
enum txmon_counter {
	TXMON_TX_SENT,	      /* frames a devmap flush handed to a driver */
	TXMON_TX_DROPPED,     /* frames the driver refused: lost silently */
	TXMON_TX_ERR_FLUSHES, /* flushes the driver failed (err != 0) */
	TXMON_REDIRECT_ERR,   /* redirects that failed before queueing */
	TXMON_NR_COUNTERS,
};

/*
 * Tracepoint contexts, written by hand from /sys/kernel/tracing/events/
 * xdp/<event>/format as kernel 6.18 prints it (no vmlinux.h needed). The
 * first 8 bytes are the common fields (type, flags, preempt count, pid).
 */
struct txmon_devmap_xmit_ctx {
	__u64 common;
	int from_ifindex; /* the interface the frames were received on */
	__u32 act;
	int to_ifindex; /* the interface they were redirected to */
	int drops;	/* frames of the batch the driver refused */
	int sent;	/* frames it took */
	int err;	/* the driver's error, 0 if none */
};

/* xdp_redirect_err and (on older kernels) xdp_redirect_map_err share it. */
struct txmon_redirect_err_ctx {
	__u64 common;
	int prog_id;
	__u32 act;
	int ifindex; /* the interface the frame was received on */
	int err;
	int to_ifindex;
	__u32 map_id;
	int map_index;
};

/* txmon_counters holds one __u64 per enum txmon_counter, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TXMON_NR_COUNTERS);
	__type(key, enum txmon_counter);
	__type(value, __u64);
} txmon_counters SEC(".maps");

/* txmon_ifindexes: the interfaces whose frames are counted (filter on). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TXMON_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u8);
} txmon_ifindexes SEC(".maps");

/* txmon_filter, set at load: count only the interfaces of txmon_ifindexes. */
volatile const __u8 txmon_filter = 0;

static __always_inline int watched(int ifindex)
{
	__u32 key = ifindex;

	if (!txmon_filter)
		return 1;
	return bpf_map_lookup_elem(&txmon_ifindexes, &key) != NULL;
}

static __always_inline void count(enum txmon_counter c, __u64 n)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&txmon_counters, &key);

	if (v)
		*v += n;
}

SEC("tracepoint/xdp/xdp_devmap_xmit")
int txmon_devmap_xmit(struct txmon_devmap_xmit_ctx *ctx)
{
	if (!watched(ctx->from_ifindex))
		return 0;
	if (ctx->sent > 0)
		count(TXMON_TX_SENT, ctx->sent);
	if (ctx->drops > 0)
		count(TXMON_TX_DROPPED, ctx->drops);
	if (ctx->err != 0)
		count(TXMON_TX_ERR_FLUSHES, 1);
	return 0;
}

SEC("tracepoint/xdp/xdp_redirect_err")
int txmon_redirect_err(struct txmon_redirect_err_ctx *ctx)
{
	if (watched(ctx->ifindex))
		count(TXMON_REDIRECT_ERR, 1);
	return 0;
}

SEC("tracepoint/xdp/xdp_redirect_map_err")
int txmon_redirect_map_err(struct txmon_redirect_err_ctx *ctx)
{
	if (watched(ctx->ifindex))
		count(TXMON_REDIRECT_ERR, 1);
	return 0;
}
