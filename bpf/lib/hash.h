/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Flow hashing for the mh and sh schedulers: Bob Jenkins' lookup3 mixing
 * (the jhash of the kernel), over whole 32-bit words.
 */
#ifndef XLB_HASH_H
#define XLB_HASH_H

#ifndef XLB_HASH_SEED
#define XLB_HASH_SEED 0x5ca1ab1e /* any fixed value; reals move if changed */
#endif

#define XLB_JHASH_INIT 0xdeadbeef

static __always_inline __u32 rol32(__u32 word, unsigned int shift)
{
	return (word << shift) | (word >> ((-shift) & 31));
}

/* clang-format off */
#define jhash_final(a, b, c)                                                   \
	do {                                                                   \
		c ^= b; c -= rol32(b, 14);                                     \
		a ^= c; a -= rol32(c, 11);                                     \
		b ^= a; b -= rol32(a, 25);                                     \
		c ^= b; c -= rol32(b, 16);                                     \
		a ^= c; a -= rol32(c, 4);                                      \
		b ^= a; b -= rol32(a, 14);                                     \
		c ^= b; c -= rol32(b, 24);                                     \
	} while (0)

/* clang-format on */

/* jhash_3words hashes three 32-bit words (lookup3's final block). */
static __always_inline __u32 jhash_3words(__u32 a, __u32 b, __u32 c, __u32 seed)
{
	__u32 init = XLB_JHASH_INIT + (3 << 2) + seed;

	a += init;
	b += init;
	c += init;
	jhash_final(a, b, c);
	return c;
}

#endif /* XLB_HASH_H */
