/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Pacing of the bench lab's senders (the frame generator and the TCP
 * client endpoint). Go runs a sender with BPF_PROG_RUN in live-frames
 * mode: each call has a fixed cost of tens of ms, so Go makes few calls of
 * many runs and the program paces itself. A run that is not due (before
 * its time, after the stop time or past the budget) sends nothing.
 */
#ifndef XLB_BENCH_PACE_H
#define XLB_BENCH_PACE_H

#define PACE_STOP_CHECK_RUNS 256 /* runs between two looks at the clock */

/* struct pace is a sender's schedule. Go writes it before a run. */
struct pace {
	__u32 stopped;	   /* 1: the stop time or the budget is reached */
	__u32 runs;	   /* runs since the last stop check */
	__u64 start_ns;	   /* the monotonic clock at the start */
	__u64 stop_ns;	   /* stop at this time */
	__u64 interval_ps; /* picoseconds between due runs; 0: unpaced */
	__u64 due_ps;	   /* when the next run is due, since start */
	__u64 now_ps;	   /* the clock when last read, since start */
	__u64 budget;	   /* due runs at most (0: no limit) */
	__u64 count;	   /* due runs so far */
};

/* pace_due says whether this run is due, and counts it if so. */
static __always_inline int pace_due(struct pace *p)
{
	__u64 now;

	if (p->stopped)
		return 0;
	if (p->budget && p->count >= p->budget)
		goto stop;
	if (++p->runs >= PACE_STOP_CHECK_RUNS) {
		p->runs = 0;
		now = bpf_ktime_get_ns();
		if (now >= p->stop_ns)
			goto stop;
		p->now_ps = (now - p->start_ns) * 1000;
	}
	if (p->interval_ps) {
		if (p->due_ps > p->now_ps) {
			/* ahead of time (or so it seemed): look at the clock */
			now = bpf_ktime_get_ns();
			if (now >= p->stop_ns)
				goto stop;
			p->now_ps = (now - p->start_ns) * 1000;
			if (p->due_ps > p->now_ps)
				return 0;
		}
		p->due_ps += p->interval_ps;
	}
	p->count++;
	return 1;
stop:
	p->stopped = 1;
	return 0;
}

#endif /* XLB_BENCH_PACE_H */
