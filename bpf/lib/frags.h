/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * XDP multi-buffer (Linux 5.18): a frame larger than a page reaches an
 * xdp.frags program in several buffers. ctx->data .. ctx->data_end is the
 * first one only; bpf_xdp_get_buff_len gives the whole frame's length and
 * bpf_xdp_load_bytes reads across buffers. Headers are read from the first
 * buffer alone (parse.h drops a frame whose headers it does not hold).
 *
 * The loader sets xlb_frags to 1 when the kernel has multi-buffer XDP and
 * loads the program with BPF_F_XDP_HAS_FRAGS; else it leaves 0 and loads
 * a plain xdp program. .rodata is frozen before the verifier runs, so with
 * 0 it removes every use of the helpers above as dead code, and a 5.15
 * kernel, which does not know them, loads the program.
 */
#ifndef XLB_FRAGS_H
#define XLB_FRAGS_H

const volatile __u32 xlb_frags = 0;

#endif /* XLB_FRAGS_H */
