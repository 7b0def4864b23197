/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
#ifndef XLB_STAGES_H
#define XLB_STAGES_H

/* Where a new connection's time goes, for xlb bench datapath: the clock
 * read at each stage's end (enum xlb_stage), the time since the last
 * reading added to the stage's sum. The daemon loads the program with
 * xlb_time_stages 0: .rodata is frozen before the verifier runs, so it
 * removes every line of this as dead code and the data path pays
 * nothing. The bench sets it to 1 in a program of its own and reads the
 * sums after BPF_PROG_RUN on one CPU: they are plain globals, not per
 * CPU, as only that run writes them. */
const volatile __u32 xlb_time_stages = 0;
__u64 xlb_stage_ns[XLB_STAGE_MAX];
__u64 xlb_stage_clock;

/* stage_start reads the clock at the program's entry. */
static __always_inline void stage_start(void)
{
	if (xlb_time_stages)
		xlb_stage_clock = bpf_ktime_get_ns();
}

/* stage_end adds the time since the last reading to stage s. */
static __always_inline void stage_end(const enum xlb_stage s)
{
	__u64 now;

	if (!xlb_time_stages)
		return;
	now = bpf_ktime_get_ns();
	xlb_stage_ns[s] += now - xlb_stage_clock;
	xlb_stage_clock = now;
}

/* stage_count counts a connection whose stages were timed. */
static __always_inline void stage_count(void)
{
	if (xlb_time_stages)
		xlb_stage_ns[XLB_STAGE_CONNS]++;
}

#endif
