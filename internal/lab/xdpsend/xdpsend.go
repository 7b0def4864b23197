// SPDX-License-Identifier: Apache-2.0

// Package xdpsend runs the bench lab's sending XDP programs (the frame
// generator, the TCP client endpoint) through BPF_PROG_RUN in
// live-frames mode: every run's XDP_TX leaves through a real interface.
//
// Each call of BPF_PROG_RUN has a fixed cost of tens of milliseconds in
// live-frames mode, so a sender makes few calls of many runs and the
// program paces itself with a schedule (struct pace of
// bpf/bench/pace.h), one per CPU, which Plan computes.
package xdpsend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// Pace mirrors struct pace of bpf/bench/pace.h: one sender's schedule.
// The programs' generated types embed the same fields and convert.
type Pace struct {
	Stopped    uint32
	Runs       uint32
	StartNs    uint64
	StopNs     uint64
	IntervalPs uint64
	DuePs      uint64
	NowPs      uint64
	Budget     uint64
	Count      uint64
}

// Options say where, how fast and how long to send.
type Options struct {
	Namespace string        // network namespace of the sending interface
	Interface string        // the sending interface
	Rate      float64       // due runs per second over all senders; 0 = as fast as they go
	Budget    uint64        // due runs over all senders at most; 0 = Rate x Duration when paced, else no limit
	Duration  time.Duration // how long
	CPUs      []int         // one sender per CPU (default CPU 0)
	Frame     []byte        // the frame each run starts from (its length is the frame's)
}

func (o *Options) check() error {
	if len(o.CPUs) == 0 {
		o.CPUs = []int{0}
	}
	if o.Rate < 0 || o.Duration <= 0 {
		return fmt.Errorf("send: rate %v and duration %v: want rate >= 0 and a duration", o.Rate, o.Duration)
	}
	if len(o.Frame) == 0 {
		return errors.New("send: no frame")
	}
	n := PossibleCPUs()
	for _, cpu := range o.CPUs {
		if cpu < 0 || cpu >= n {
			return fmt.Errorf("send: CPU %d: this machine has CPUs 0 to %d", cpu, n-1)
		}
	}
	return nil
}

// Plan returns every possible CPU's schedule for o: the senders' CPUs
// share the rate and the budget, the others are stopped.
func Plan(o Options) ([]Pace, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	per := make([]Pace, PossibleCPUs())
	for i := range per {
		per[i].Stopped = 1
	}
	now, err := MonotonicNow()
	if err != nil {
		return nil, err
	}
	rate := o.Rate / float64(len(o.CPUs))
	for i, cpu := range o.CPUs {
		p := &per[cpu]
		p.Stopped, p.StartNs, p.StopNs = 0, now, now+uint64(o.Duration)
		if o.Budget > 0 {
			p.Budget = o.Budget / uint64(len(o.CPUs))
			if uint64(i) < o.Budget%uint64(len(o.CPUs)) {
				p.Budget++
			}
		}
		if rate > 0 {
			// paced: the budget ends the run; the stop time is a
			// safety net that leaves room to catch up after the
			// pauses between calls
			p.IntervalPs = uint64(1e12 / rate)
			if o.Budget == 0 {
				p.Budget = uint64(math.Round(rate * o.Duration.Seconds()))
			}
			p.StopNs += uint64(max(o.Duration/10, 50*time.Millisecond))
		}
	}
	return per, nil
}

// Into copies p into dst, a pointer to a program's generated copy of
// struct pace (bpf2go gives each program a type of its own).
func (p Pace) Into(dst any) error {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.NativeEndian, p); err != nil {
		return err
	}
	return binary.Read(&b, binary.NativeEndian, dst)
}

// xdpMd is struct xdp_md, the context live frames run with.
type xdpMd struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// MonotonicNow reads the clock bpf_ktime_get_ns reads.
func MonotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("read the monotonic clock: %w", err)
	}
	return uint64(ts.Nano()), nil
}

// Stopped reports whether the sender of cpu has stopped (read from the
// program's state map after each call).
type Stopped func(cpu int) (bool, error)

// Run runs prog on every sender's CPU until stopped says so (or ctx
// ends) and returns how long it took. The caller has written the
// schedules (Plan) into the program's state before.
func Run(ctx context.Context, prog *ebpf.Program, o Options, stopped Stopped) (time.Duration, error) {
	if err := o.check(); err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(o.CPUs))
	start := time.Now()
	for i, cpu := range o.CPUs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = netns.Run(o.Namespace, func() error { return sender(ctx, prog, o, cpu, stopped) })
		}()
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// runsPerCall bounds one BPF_PROG_RUN call: long enough to hide the
// call's fixed cost, short enough to end soon after the stop time.
func runsPerCall(remaining time.Duration) uint32 {
	return uint32(min(max(remaining.Seconds()*8e6, 1<<16), 1<<24))
}

// sender runs on a thread locked in the sending namespace, pinned to cpu
// for the run (its affinity is restored before the thread is let go),
// and calls the program until it says stopped.
func sender(ctx context.Context, prog *ebpf.Program, o Options, cpu int, stopped Stopped) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("cpu affinity: %w", err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return fmt.Errorf("pin sender to CPU %d: %w", cpu, err)
	}
	defer unix.SchedSetaffinity(0, &old)

	ifc, err := net.InterfaceByName(o.Interface)
	if err != nil {
		return fmt.Errorf("sending interface: %w", err)
	}
	opts := &ebpf.RunOptions{
		Data:      o.Frame,
		Context:   xdpMd{DataEnd: uint32(len(o.Frame)), IngressIfindex: uint32(ifc.Index)},
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: 64,
	}
	end := time.Now().Add(o.Duration)
	for ctx.Err() == nil {
		opts.Repeat = runsPerCall(time.Until(end))
		if _, err := prog.Run(opts); err != nil {
			return fmt.Errorf("run %s on %s: %w", prog, o.Interface, err)
		}
		done, err := stopped(cpu)
		if err != nil || done {
			return err
		}
	}
	return ctx.Err()
}

// PossibleCPUs is the number of CPUs per-CPU maps have values for.
func PossibleCPUs() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return runtime.NumCPU()
	}
	return n
}
