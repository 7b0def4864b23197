/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Incremental Internet checksum updates (RFC 1624: HC' = ~(~HC + ~m + m')).
 *
 * A rewrite collects the one's-complement difference of every 16-bit word
 * it changes into a struct csum_delta, then applies that delta to each
 * checksum covering those words. Words are read as they lie in memory, so
 * the sums are byte-order independent (RFC 1071) and no swap is needed.
 * Only inline helpers: the bench generator (bench/gen.bpf.c) shares them.
 * Summing a whole segment is in csum_seg.h.
 */
#ifndef XLB_CSUM_H
#define XLB_CSUM_H

/* The running sum of ~old + new over changed 16-bit words. */
struct csum_delta {
	__u32 sum;
};

static __always_inline void csum_delta_add16(struct csum_delta *d, __u16 from,
					     __u16 to)
{
	d->sum += (__u16)~from;
	d->sum += to;
}

static __always_inline void csum_delta_add32(struct csum_delta *d, __u32 from,
					     __u32 to)
{
	csum_delta_add16(d, from >> 16, to >> 16);
	csum_delta_add16(d, from & 0xffff, to & 0xffff);
}

static __always_inline void csum_delta_merge(struct csum_delta *d,
					     const struct csum_delta *other)
{
	d->sum += other->sum;
}

/* csum_fold folds a 32-bit one's-complement sum into 16 bits. */
static __always_inline __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* csum_apply returns checksum csum updated by delta d. */
static __always_inline __u16 csum_apply(__u16 csum, const struct csum_delta *d)
{
	return ~csum_fold32((__u16)~csum + d->sum);
}

/* csum_apply_udp is csum_apply for UDP, where 0 means "no checksum": an
 * absent IPv4 checksum stays absent, and a computed 0 is sent as 0xffff. */
static __always_inline __u16 csum_apply_udp(__u16 csum,
					    const struct csum_delta *d)
{
	if (csum == 0)
		return 0;
	csum = csum_apply(csum, d);
	return csum ? csum : 0xffff;
}

/* csum_fold64 folds a 64-bit one's-complement sum into 16 bits. */
static __always_inline __u16 csum_fold64(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return csum_fold32(sum);
}

/* csum_add_word32 adds the two 16-bit halves of a 32-bit word, as it
 * lies in memory, to a running sum. */
static __always_inline __u32 csum_add_word32(__u32 sum, __u32 w)
{
	return sum + (w >> 16) + (w & 0xffff);
}

#endif /* XLB_CSUM_H */
