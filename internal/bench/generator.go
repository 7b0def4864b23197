// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab"
)

// Vary is the set of fields that change from flow to flow.
type Vary uint32

// The fields a flow varies (enum gen_vary of bpf/bench/gen.bpf.c).
const (
	VarySrcMAC Vary = 1 << iota
	VaryDstMAC
	VarySrcIP
	VaryDstIP
	VarySrcPort
	VaryDstPort
)

// MaxFlows is the most flows the generator rotates through.
const MaxFlows = 1 << 20

// ParseVary reads a VSPERF multi-flow variation: LAYER-WHICH with LAYER
// l2, l3 or l4 and WHICH src, dst or both (l4-src: source ports).
func ParseVary(s string) (Vary, error) {
	layer, which, _ := strings.Cut(s, "-")
	fields := map[string][2]Vary{"l2": {VarySrcMAC, VaryDstMAC}, "l3": {VarySrcIP, VaryDstIP}, "l4": {VarySrcPort, VaryDstPort}}[layer]
	switch {
	case fields[0] == 0:
	case which == "src":
		return fields[0], nil
	case which == "dst":
		return fields[1], nil
	case which == "both":
		return fields[0] | fields[1], nil
	}
	return 0, fmt.Errorf("flow variation %q: want l2, l3 or l4, then -src, -dst or -both", s)
}

// Generator sends frames with XDP_TX from an XDP program run through
// BPF_PROG_RUN in live-frames mode, one sender per CPU.
type Generator struct {
	objs genObjects
	tmpl template
}

// NewGenerator loads the generator program.
func NewGenerator() (*Generator, error) {
	g := &Generator{}
	if err := loadGenObjects(&g.objs, nil); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return g, nil
}

// Close releases the program.
func (g *Generator) Close() error { return g.objs.Close() }

// Configure sets the frame the flows start from, how many flows there
// are and which fields vary between them.
func (g *Generator) Configure(f Frame, flows int, vary Vary) error {
	if flows < 1 || flows > MaxFlows {
		return fmt.Errorf("flows %d: want 1 to %d", flows, MaxFlows)
	}
	if vary&(VarySrcPort|VaryDstPort) != 0 && flows > 65536 {
		return fmt.Errorf("flows %d: ports give at most 65536", flows)
	}
	t, err := f.build()
	if err != nil {
		return err
	}
	cfg := genGenCfg{Flows: uint32(flows), Vary: uint32(vary), IpOff: uint16(t.ipOff), L4Off: uint16(t.l4Off)}
	cfg.HdrLen = uint16(min(len(t.data), maxTemplateHdr) &^ 7)
	if t.ipv6 {
		cfg.Ipv6 = 1
	}
	// An IPv4 UDP checksum of 0 means "none": it must stay 0.
	if !(f.L4 == UDP && !t.ipv6 && t.data[t.csumOff] == 0 && t.data[t.csumOff+1] == 0) {
		cfg.L4CsumOff = uint16(t.csumOff)
	}
	copy(cfg.Hdr[:], t.data)
	if err := g.objs.GenConfig.Set(cfg); err != nil {
		return fmt.Errorf("configure generator: %w", err)
	}
	g.tmpl = t
	return nil
}

// Sent returns what the generator sent in the last Send.
func (g *Generator) Sent() (packets, bytes uint64, err error) {
	per, err := g.states()
	for _, s := range per {
		packets += s.Sent.Packets
		bytes += s.Sent.Bytes
	}
	return packets, bytes, err
}

func (g *Generator) states() ([]genGenState, error) {
	var per []genGenState
	if err := g.objs.GenStates.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("read generator state: %w", err)
	}
	return per, nil
}

// SendOptions say where, how fast and how long the generator sends.
type SendOptions struct {
	Namespace string        // network namespace of the sending interface
	Interface string        // the sending interface
	Rate      float64       // frames per second over all senders; 0 = as fast as they can
	Duration  time.Duration // how long
	CPUs      []int         // one sender per CPU (default CPU 0)
}

// xdpMd is struct xdp_md, the context live frames run with.
type xdpMd struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

func monotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("read the monotonic clock: %w", err)
	}
	return uint64(ts.Nano()), nil
}

// Send runs the senders for the duration (or until ctx ends) and
// returns how long they took. Paced, each sender sends exactly its share
// of Rate x Duration frames, evenly spaced by the program itself.
func (g *Generator) Send(ctx context.Context, o SendOptions) (time.Duration, error) {
	if g.tmpl.data == nil {
		return 0, errors.New("generator not configured")
	}
	if len(o.CPUs) == 0 {
		o.CPUs = []int{0}
	}
	if o.Rate < 0 || o.Duration <= 0 {
		return 0, fmt.Errorf("send: rate %v and duration %v: want rate >= 0 and a duration", o.Rate, o.Duration)
	}
	ncpu := mustCPUs()
	states := make([]genGenState, ncpu)
	for i := range states {
		states[i].Stopped = 1
	}
	now, err := monotonicNow()
	if err != nil {
		return 0, err
	}
	perSender := o.Rate / float64(len(o.CPUs))
	for _, cpu := range o.CPUs {
		if cpu < 0 || cpu >= ncpu {
			return 0, fmt.Errorf("send: CPU %d: this machine has CPUs 0 to %d", cpu, ncpu-1)
		}
		st := &states[cpu]
		st.Stopped, st.StartNs, st.StopNs = 0, now, now+uint64(o.Duration)
		if perSender > 0 {
			// paced: the budget ends the run; the stop time is a
			// safety net that leaves room to catch up after the
			// pauses between calls
			st.IntervalPs = uint64(1e12 / perSender)
			st.Budget = uint64(math.Round(perSender * o.Duration.Seconds()))
			st.StopNs += uint64(max(o.Duration/10, 50*time.Millisecond))
		}
	}
	if err := g.objs.GenStates.Put(uint32(0), states); err != nil {
		return 0, fmt.Errorf("set up senders: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(o.CPUs))
	start := time.Now()
	for i, cpu := range o.CPUs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lab.InNamespace(o.Namespace, func() error { return g.sender(ctx, o, cpu) })
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
// and calls the program until its state says stopped.
func (g *Generator) sender(ctx context.Context, o SendOptions, cpu int) error {
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
		Data:      g.tmpl.data,
		Context:   xdpMd{DataEnd: uint32(len(g.tmpl.data)), IngressIfindex: uint32(ifc.Index)},
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: 64,
	}
	end := time.Now().Add(o.Duration)
	for ctx.Err() == nil {
		opts.Repeat = runsPerCall(time.Until(end))
		if _, err := g.objs.XdpGen.Run(opts); err != nil {
			return fmt.Errorf("run generator on %s: %w", o.Interface, err)
		}
		per, err := g.states()
		if err != nil {
			return err
		}
		if per[cpu].Stopped != 0 {
			return nil
		}
	}
	return ctx.Err()
}

func mustCPUs() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return runtime.NumCPU()
	}
	return n
}
