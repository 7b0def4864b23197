/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The checksum of a whole L4 segment of any length, for frames the kernel
 * hands over with a partial checksum (nat.h). Global functions: every
 * object that includes this header carries them, so it is apart from the
 * inline helpers of csum.h.
 */
#ifndef XLB_CSUM_SEG_H
#define XLB_CSUM_SEG_H

#include <stdbool.h>

#include "consts.h"
#include "csum.h"
#include "frags.h"

#define XLB_CSUM_CHUNK 64  /* bytes summed by one bpf_csum_diff call */
#define XLB_CSUM_LOAD  512 /* bytes one bpf_xdp_load_bytes call copies */

/* Per CPU: where xlb_csum_loaded copies the bytes it sums, with room for
 * the zeros that round a last piece up to whole 32-bit words, and its
 * running sum. Both are off the stack: xlb_csum_loaded is called at the
 * end of the deepest call chain, whose stack is 512 bytes at most. */
struct csum_scratch {
	__u64 sum;
	__u8 bytes[XLB_CSUM_LOAD + 4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct csum_scratch);
} csum_scratch SEC(".maps");

/* The key of one-entry maps, in .rodata rather than on the stack. */
static const __u32 xlb_zero_key = 0;

/* Summing a segment of any length takes global functions, which the
 * verifier checks once each, whatever calls them: whole chunks, then the
 * shorter rest at an offset the verifier cannot know. All return the
 * 16-bit folded sum (memory order, like every sum here), or -1 when the
 * bytes lie beyond the frame. */

/* xlb_csum_chunks sums the whole XLB_CSUM_CHUNKs of the len bytes at
 * frame offset off, in the first buffer. */
__noinline int xlb_csum_chunks(struct xdp_md *ctx, __u32 off, __u32 len)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *p = (void *)(long)ctx->data;
	__u64 sum = 0;
	int i;

	/* masks, not comparisons, bound what the verifier must see bounded:
	 * the compiler would drop a mask after a comparison */
	p += off & (XLB_CSUM_MAX_LEN - 1);
	len &= 2 * XLB_CSUM_MAX_LEN - 1;
	for (i = 0; i < XLB_CSUM_MAX_LEN / XLB_CSUM_CHUNK; i++) {
		if ((i + 1) * XLB_CSUM_CHUNK > len)
			break;
		if (p + XLB_CSUM_CHUNK > data_end)
			return -1;
		sum += (__u32)bpf_csum_diff(NULL, 0, p, XLB_CSUM_CHUNK, 0);
		p += XLB_CSUM_CHUNK;
	}
	return csum_fold64(sum);
}

/* xlb_csum_tail sums the len (< XLB_CSUM_CHUNK) bytes at frame offset off,
 * in the first buffer; an odd last byte counts as if a zero byte followed
 * it. */
__noinline int xlb_csum_tail(struct xdp_md *ctx, __u32 off, __u32 len)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *p = (void *)(long)ctx->data;
	__u32 sum = 0;
	int i;

	p += off & (2 * XLB_CSUM_MAX_LEN - 1);
	len &= XLB_CSUM_CHUNK - 1;
	for (i = 0; i < XLB_CSUM_CHUNK / 2; i++) {
		if (2 * i + 2 > len)
			break;
		if (p + 2 > data_end)
			return -1;
		sum += *(__u16 *)p;
		p += 2;
	}
	if (len & 1) {
		if (p + 1 > data_end)
			return -1;
		sum += bpf_ntohs((__u16)(*(__u8 *)p) << 8);
	}
	return csum_fold32(sum);
}

/* xlb_csum_loaded sums the len bytes at frame offset off, in whichever
 * buffers they lie, copying XLB_CSUM_LOAD bytes at a time: the pieces
 * start at even distances from off, so their sums add up; the last is
 * padded with zeros to whole words, as the checksum pads an odd byte.
 * Only a multi-buffer program has the helper (frags.h). */
__noinline int xlb_csum_loaded(struct xdp_md *ctx, __u32 off, __u32 len)
{
	struct csum_scratch *buf;
	__u32 n;
	int i;

	if (!xlb_frags)
		return -1;
	buf = bpf_map_lookup_elem(&csum_scratch, &xlb_zero_key);
	if (!buf)
		return -1;
	buf->sum = 0;
	/* whole pieces, then the rest: a loop whose pieces could be either
	 * would have the verifier follow every iteration from each short
	 * one */
	for (i = 0; i < XLB_CSUM_SEG_MAX / XLB_CSUM_LOAD; i++) {
		if (len < XLB_CSUM_LOAD)
			break;
		if (bpf_xdp_load_bytes(ctx, off, buf->bytes, XLB_CSUM_LOAD))
			return -1;
		buf->sum += (__u32)bpf_csum_diff(NULL, 0, (void *)buf->bytes,
						 XLB_CSUM_LOAD, 0);
		off += XLB_CSUM_LOAD;
		len -= XLB_CSUM_LOAD;
	}
	if (len >= XLB_CSUM_LOAD)
		return -1;
	if (len) {
		/* len itself, in a form the verifier knows is 1 to 512 */
		n = ((len - 1) & (XLB_CSUM_LOAD - 1)) + 1;
		if (bpf_xdp_load_bytes(ctx, off, buf->bytes, n))
			return -1;
		*(__u32 *)&buf->bytes[n] = 0;
		buf->sum += (__u32)bpf_csum_diff(NULL, 0, (void *)buf->bytes,
						 (n + 3) & ~3U, 0);
	}
	return csum_fold64(buf->sum);
}

/* l4_segment_sum returns the folded sum of the len bytes at frame offset
 * off, or -1 for bytes beyond the frame (or, in the first buffer alone,
 * more than XLB_CSUM_MAX_LEN). Bytes that run past the first buffer (a
 * multi-buffer frame, frags.h): the whole chunks the first buffer holds
 * are summed in place, the rest is copied. */
static __always_inline int l4_segment_sum(struct xdp_md *ctx, __u32 off,
					  __u32 len)
{
	__u32 first = (__u32)(ctx->data_end - ctx->data);
	__u32 whole = len & ~(XLB_CSUM_CHUNK - 1);
	int head, rest;

	if (off + len > first) {
		/* fewer than len: the segment ends past the first buffer */
		whole = first > off ? (first - off) & ~(XLB_CSUM_CHUNK - 1) : 0;
		head = xlb_csum_chunks(ctx, off, whole);
		rest = xlb_csum_loaded(ctx, off + whole, len - whole);
	} else {
		if (len > XLB_CSUM_MAX_LEN)
			return -1;
		head = xlb_csum_chunks(ctx, off, len);
		rest = xlb_csum_tail(ctx, off + whole, len - whole);
	}
	if (head < 0 || rest < 0)
		return -1;
	return csum_fold32(head + rest);
}

#define XLB_TCP_CSUM_OFF 16 /* offsetof(struct tcphdr, check) */
#define XLB_UDP_CSUM_OFF 6  /* offsetof(struct udphdr, check) */

/* l4_csum_fill writes the complete checksum of the l4_len-byte segment at
 * frame offset l4_off, whose checksum field (at csum_off in the segment,
 * in the first buffer) holds zero, given the sum of its pseudo-header.
 * Returns 0, or -1 for a segment beyond the frame or too long to sum. */
static __always_inline int l4_csum_fill(struct xdp_md *ctx, __u32 l4_off,
					__u32 l4_len, __u32 pseudo,
					__u32 csum_off)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *l4 = (void *)(long)ctx->data;
	__u16 *field;
	__u16 check;
	int sum;

	sum = l4_segment_sum(ctx, l4_off, l4_len);
	if (sum < 0)
		return -1;
	check = ~csum_fold32(pseudo + sum);
	if (csum_off == XLB_UDP_CSUM_OFF && check == 0)
		check = 0xffff; /* 0 would mean "no checksum" */
	/* see xlb_csum_chunks for the mask */
	l4 += l4_off & (XLB_CSUM_MAX_LEN - 1);
	field = l4 + (csum_off == XLB_UDP_CSUM_OFF ? XLB_UDP_CSUM_OFF
						   : XLB_TCP_CSUM_OFF);
	if ((void *)(field + 1) > data_end)
		return -1;
	*field = check;
	return 0;
}

#endif /* XLB_CSUM_SEG_H */
