// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// The synflood scenario: a SYN flood from spoofed sources, alone and
// while the XDP client opens legitimate connections through the DUT, all
// on one core (on veth a DUT works on the core that sends).

// floodSources are the flood's spoofed client addresses: 65,536 of the
// client block that no legitimate slot uses (those start at
// clientFirstAddr), so the DUTs' answers go back to the client, whose
// endpoint passes them (no slot of its own) and whose kernel drops them.
var floodFirstAddr = netip.MustParseAddr("198.19.0.0")

const floodSources = 1 << 16

// Flood phases, in the order they run.
const (
	PhaseCeiling   = "ceiling"    // the flood into an XDP sink on the balancer: the generator alone
	PhaseReflect   = "reflect"    // ... and every SYN sent back to the client: the lab's share of an answer
	PhaseFlood     = "flood"      // the flood alone, as fast as the generator sends
	PhaseLegit     = "legit"      // legitimate connections alone
	PhaseLegitHalf = "legit+half" // ... with the flood at half what the DUT answered alone
	PhaseLegitFull = "legit+full" // ... with the flood as fast as the generator sends
)

// SynFloodTrial is one phase of the synflood scenario through one DUT.
type SynFloodTrial struct {
	DUT      string  `json:"dut"`
	Phase    string  `json:"phase"`
	Duration float64 `json:"duration_s"`
	// FloodAskedPPS is the flood's pace (0: as fast as the generator
	// sends); FloodSent and FloodPPS what it sent.
	FloodAskedPPS float64 `json:"flood_asked_pps"`
	FloodSent     uint64  `json:"flood_sent"`
	FloodPPS      float64 `json:"flood_pps"`
	// Proxy are the DUT's SYN proxy counters over the phase (SYNs
	// answered with a cookie, valid and invalid cookies returned), for
	// the DUTs with one; AnsweredPPS the SYNs answered per second.
	Proxy       *bench.SynproxyCounts `json:"proxy,omitempty"`
	AnsweredPPS float64               `json:"answered_pps"`
	// SYNsToReals are the SYNs the reals' endpoints answered: SYNs
	// that reached a real (legitimate connections' included).
	SYNsToReals uint64 `json:"syns_to_reals"`
	// TableBefore and TableAfter are the connections the DUT held at
	// the phase's start and end (xlb's table, conntrack's entries).
	TableBefore uint64 `json:"table_before"`
	TableAfter  uint64 `json:"table_after"`
	// Legit is the legitimate connections' trial, when there were any.
	Legit *ConnTrial `json:"legit,omitempty"`
}

// floodFrame configures the generator with the flood's SYNs to dst.
func (r *Runner) floodFrame(dst netip.Addr) error {
	frame := r.env.Frame(traffic.MinFrameSize, traffic.TCPSyn, dst, endpointPort)
	frame.Src = netip.AddrPortFrom(floodFirstAddr, 1024)
	return r.env.Gen.Configure(frame, floodSources, traffic.VarySrcIP)
}

// FloodCeiling measures the lab without a DUT: the flood as fast as the
// generator sends into an XDP sink on the balancer's interface (the
// generator alone), then with the sink sending every SYN back to the
// client as a DUT's answer goes (the generator and the answers' way
// back), on the scenario's core. A DUT that answers SYNs shares that
// core with both; the report takes their share out.
func (r *Runner) FloodCeiling(ctx context.Context) error {
	t := r.env.Topo
	if err := r.env.Sink.Attach(t.LB(), "l0"); err != nil {
		return err
	}
	defer r.env.Sink.Detach(t.LB(), "l0")
	defer r.env.Sink.Reflect(false)
	if err := r.floodFrame(t.VIP()); err != nil {
		return err
	}
	for _, phase := range []string{PhaseCeiling, PhaseReflect} {
		if err := r.env.Sink.Reflect(phase == PhaseReflect); err != nil {
			return err
		}
		before, err := r.env.Sink.Count()
		if err != nil {
			return err
		}
		d := r.opts.Duration
		if _, err := r.env.Gen.Send(ctx, traffic.SendOptions{Namespace: t.Client(), Interface: "c0", Duration: d, CPUs: r.cpus(1)}); err != nil {
			return err
		}
		after, err := r.env.Sink.Count()
		if err != nil {
			return err
		}
		sent, _, err := r.env.Gen.Sent()
		if err != nil {
			return err
		}
		ft := SynFloodTrial{DUT: "sink", Phase: phase, Duration: d.Seconds(), FloodSent: sent,
			FloodPPS: float64(sent) / d.Seconds(), AnsweredPPS: float64(after.Packets-before.Packets) / d.Seconds()}
		r.res.SynFlood = append(r.res.SynFlood, ft)
		r.progressFlood(ft)
	}
	return nil
}

// synFlood runs the four phases through dut.
func (r *Runner) synFlood(ctx context.Context, dut bench.DUT) error {
	o := r.opts
	cl, err := newConnLab(r.env, dut, connSpec{senderCPU: o.CPUs[0], slots: cpsSlots, requestSize: o.PayloadSize, responseSize: o.PayloadSize})
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := r.floodFrame(dut.Target(r.env, false, false)); err != nil {
		return err
	}
	alone, err := r.floodPhase(ctx, cl, PhaseFlood, 0, 0)
	if err != nil {
		return err
	}
	half := alone.AnsweredPPS / 2
	if alone.Proxy == nil {
		// no proxy: what it did with the SYNs is forward them
		half = float64(alone.SYNsToReals) / alone.Duration / 2
	}
	for _, p := range []struct {
		phase string
		flood float64
	}{{PhaseLegit, -1}, {PhaseLegitHalf, max(half, 1)}, {PhaseLegitFull, 0}} {
		if _, err := r.floodPhase(ctx, cl, p.phase, p.flood, o.OpenRate); err != nil {
			return err
		}
	}
	return nil
}

// floodPhase runs the flood at flood packets per second (0: as fast as
// the generator sends; below 0: none) and legitimate connections at
// legit per second (0: none) for the trial's duration on one core, and
// records it.
func (r *Runner) floodPhase(ctx context.Context, cl *connLab, phase string, flood, legit float64) (SynFloodTrial, error) {
	cpus := r.cpus(1)
	d := r.opts.Duration
	t := SynFloodTrial{DUT: cl.dut.Name(), Phase: phase, Duration: d.Seconds(), FloodAskedPPS: max(flood, 0)}
	if err := cl.dut.Alive(ctx, r.env); err != nil {
		return t, fmt.Errorf("%s is not alive before the trial: %w", cl.dut.Name(), err)
	}
	pc, counts := cl.dut.(bench.SynproxyCounter)
	counts = counts && pc.SynProxy()
	var proxyBefore bench.SynproxyCounts
	if counts {
		var err error
		if proxyBefore, err = pc.SynproxyCounts(ctx, r.env); err != nil {
			return t, err
		}
	}
	before, err := cl.read(ctx)
	if err != nil {
		return t, err
	}
	if t.TableBefore, _, _, err = r.env.DUTConns(ctx, cl.dut); err != nil {
		return t, err
	}

	var wg sync.WaitGroup
	var floodErr, legitErr error
	if flood >= 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, floodErr = r.env.Gen.Send(ctx, traffic.SendOptions{Namespace: cl.ns, Interface: "c0", Rate: flood,
				Duration: d, CPUs: cpus})
		}()
	}
	if legit > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			legitErr = cl.run(ctx, endpoint.Open, legit, 0, d, cpus)
		}()
	}
	wg.Wait()
	if floodErr != nil {
		return t, fmt.Errorf("flood: %w", floodErr)
	}
	if legitErr != nil {
		return t, legitErr
	}
	if flood >= 0 {
		if t.FloodSent, _, err = r.env.Gen.Sent(); err != nil {
			return t, err
		}
		t.FloodPPS = float64(t.FloodSent) / d.Seconds()
	}
	// the table right after the flood, before half-open entries expire
	if t.TableAfter, _, _, err = r.env.DUTConns(ctx, cl.dut); err != nil {
		return t, err
	}
	if legit > 0 {
		if err := cl.settle(ctx, cpus, false); err != nil {
			return t, err
		}
	}
	after, err := cl.read(ctx)
	if err != nil {
		return t, err
	}
	if counts {
		now, err := pc.SynproxyCounts(ctx, r.env)
		if err != nil {
			return t, err
		}
		p := now.Sub(proxyBefore)
		t.Proxy = &p
		t.AnsweredPPS = float64(p.SYNs) / d.Seconds()
	}
	t.SYNsToReals = after.server.Sub(before.server).SYNs
	if legit > 0 {
		lt := cl.trial(r.scenario, phase, len(cpus), legit, d, before, after)
		t.Legit = &lt
	}
	r.res.SynFlood = append(r.res.SynFlood, t)
	r.progressFlood(t)
	return t, nil
}

// progressFlood reports a phase on the progress writer.
func (r *Runner) progressFlood(t SynFloodTrial) {
	if r.opts.Progress == nil || r.opts.JSONProgress {
		return
	}
	line := fmt.Sprintf("[synflood] %-13s %-10s flood %9.0f pps sent, %9.0f answered/s, %7d SYNs to reals, table %d -> %d",
		t.DUT, t.Phase, t.FloodPPS, t.AnsweredPPS, t.SYNsToReals, t.TableBefore, t.TableAfter)
	if t.Legit != nil {
		line += fmt.Sprintf("; legit %.0f cps, %d errors", t.Legit.CPS, t.Legit.Errors)
	}
	fmt.Fprintln(r.opts.Progress, line)
}
