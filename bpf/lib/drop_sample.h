/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The drop flight recorder (xlb drops --follow): while someone listens,
 * a dropped frame's first bytes, its reason, interface and CPU go to the
 * drop_samples ring, at most XLB_DROP_SAMPLES_PER_SEC per CPU, as cilium
 * monitor --type drop shows them. Nobody listening, a drop costs one load
 * of xlb_drop_listeners more. */
#ifndef XLB_DROP_SAMPLE_H
#define XLB_DROP_SAMPLE_H

#include "maps.h"
#include "tcp_edit.h"

#define XLB_NSEC_PER_SEC 1000000000ULL

/* xlb_drop_sample samples the frame of ctx, just dropped, if someone
 * listens and this CPU's budget for the second allows. A global function:
 * the verifier checks it once, apart from the packet's path. */
__attribute__((noinline)) int xlb_drop_sample(struct xdp_md *ctx)
{
	__u32 key = 0, len, caplen;
	struct drop_state *st;
	struct drop_sample *s;
	__u64 now, second;

	if (!ctx || !xlb_drop_listeners)
		return 0;
	st = bpf_map_lookup_elem(&drop_states, &key);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	second = now / XLB_NSEC_PER_SEC;
	if (st->second != second) {
		st->second = second;
		st->sampled = 0;
	}
	if (st->sampled >= XLB_DROP_SAMPLES_PER_SEC)
		return 0;
	s = bpf_ringbuf_reserve(&drop_samples, sizeof(*s), 0);
	if (!s)
		return 0;
	st->sampled++;
	len = ctx->data_end - ctx->data;
	if (xlb_xdp_bytes)
		len = bpf_xdp_get_buff_len(ctx);
	caplen = len < XLB_DROP_SAMPLE_BYTES ? len : XLB_DROP_SAMPLE_BYTES;
	s->ns = now;
	s->ifindex = ctx->ingress_ifindex;
	s->cpu = bpf_get_smp_processor_id();
	s->len = len;
	s->reason = st->reason;
	s->pad = 0;
	s->caplen = 0;
	if (xlb_xdp_bytes) {
		if (caplen > 0 && caplen <= XLB_DROP_SAMPLE_BYTES &&
		    bpf_xdp_load_bytes(ctx, 0, s->data, caplen) == 0)
			s->caplen = caplen;
	} else {
		/* single buffer: the first bytes in place, 64 or 14 */
		void *data = (void *)(long)ctx->data;
		void *end = (void *)(long)ctx->data_end;

		if (data + 64 <= end) {
			__builtin_memcpy(s->data, data, 64);
			s->caplen = 64;
		} else if (data + 14 <= end) {
			__builtin_memcpy(s->data, data, 14);
			s->caplen = 14;
		}
	}
	bpf_ringbuf_submit(s, 0);
	return 0;
}

#endif /* XLB_DROP_SAMPLE_H */
