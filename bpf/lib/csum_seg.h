/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The checksum of a whole L4 segment of any length, for frames the kernel
 * hands over with a partial checksum (nat.h). Global functions: every
 * object that includes this header carries them, so it is apart from the
 * inline helpers of csum.h.
 */
#ifndef XLB_CSUM_SEG_H
#define XLB_CSUM_SEG_H

#include "consts.h"
#include "csum.h"

#define XLB_CSUM_CHUNK 64 /* bytes summed by one bpf_csum_diff call */

/* Summing a segment of any length takes two global functions, which the
 * verifier checks once each, whatever calls them: whole chunks, then the
 * shorter rest at an offset the verifier cannot know. Both return the
 * 16-bit folded sum (memory order, like every sum here), or -1 when the
 * bytes lie beyond the frame. */

/* xlb_csum_chunks sums the whole XLB_CSUM_CHUNKs of the len bytes at
 * frame offset off. */
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

/* xlb_csum_tail sums the len (< XLB_CSUM_CHUNK) bytes at frame offset off;
 * an odd last byte counts as if a zero byte followed it. */
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

#endif /* XLB_CSUM_SEG_H */
