// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// TrialSpec is what one trial sends.
type TrialSpec struct {
	Size     int           // frame size with FCS
	L4       traffic.L4    // udp, tcp-syn, tcp-ack
	IPv6     bool          // IPv6 frames
	Flows    int           // flows rotated through
	Vary     string        // VSPERF variation (l3-src, ...); "" for one flow
	Rate     float64       // frames per second; 0 = as fast as the generator goes
	Duration time.Duration // how long
	CPUs     []int         // generator senders
	// Warmup sends every flow once, slowly, before the trial, so that a
	// stateful DUT measures established flows (as VSPERF's and TRex's
	// learning phase).
	Warmup bool
	// Latency stamps each frame with its send time and has the sinks
	// time them (Trial.Latency)
	Latency bool
	// Answered has the reals answer every frame back through the DUT to
	// the client (Env.Answer), traffic in both directions
	Answered bool
}

// WarmupRate is how fast warm-up frames go: below every DUT's
// connection-setup rate here.
const WarmupRate = 200_000

// Trial is a trial's outcome. Loss is exact: both counts are read from
// counters, the generator's and the sinks'. A trial whose counts cannot
// be right is marked invalid and has no figures.
type Trial struct {
	Scenario string     `json:"scenario"`
	Role     string     `json:"role"` // max, fixed, ndr, pdr
	DUT      string     `json:"dut"`
	Size     int        `json:"frame_size"`
	L4       traffic.L4 `json:"l4"`
	IPv6     bool       `json:"ipv6"`
	Flows    int        `json:"flows"`
	Vary     string     `json:"vary,omitempty"`
	AskedPPS float64    `json:"asked_pps"` // 0: as fast as possible
	Duration float64    `json:"duration_s"`
	Sent     uint64     `json:"sent"`
	Received uint64     `json:"received"`
	Lost     uint64     `json:"lost"`
	LossPct  float64    `json:"loss_pct"`
	TxPPS    float64    `json:"tx_pps"` // offered: sent over the duration
	RxPPS    float64    `json:"rx_pps"` // forwarded: received over the duration
	RxMbps   float64    `json:"rx_mbps"`
	Valid    bool       `json:"valid"`
	Invalid  string     `json:"invalid,omitempty"` // why not valid
	// DUTDrops are the drops the DUT counted itself during the trial,
	// by reason (xlb's drop counters), where it has such counters.
	DUTDrops map[string]uint64 `json:"dut_drops,omitempty"`
	// RingDropsIn and RingDropsOut are frames veth had no room for:
	// into the DUT (its receive ring was full) and out of it (a real's
	// ring was full). Both are part of Lost.
	RingDropsIn  uint64 `json:"ring_drops_in,omitempty"`
	RingDropsOut uint64 `json:"ring_drops_out,omitempty"`
	ElapsedMs    int64  `json:"elapsed_ms"`
	Warmup       int    `json:"warmup_frames,omitempty"` // frames sent before the trial
	// Latency is the frames' time from the generator to a sink, when
	// the trial timed them (TrialSpec.Latency)
	Latency *traffic.Latency `json:"latency,omitempty"`
	// Returned are the reals' answers that came back to the client
	// (TrialSpec.Answered); ReturnPPS over the duration
	Returned  uint64  `json:"returned,omitempty"`
	ReturnPPS float64 `json:"return_pps,omitempty"`
	// Answered says the trial ran both ways; RoundTripLossPct is then
	// the frames whose answer did not come back, of those sent: what
	// its searches count as loss
	Answered         bool    `json:"answered,omitempty"`
	RoundTripLossPct float64 `json:"round_trip_loss_pct,omitempty"`
}

// newTrial is the record of a trial of s through dut, before it runs.
func newTrial(dut bench.DUT, s TrialSpec) Trial {
	return Trial{DUT: dut.Name(), Size: s.Size, L4: s.L4, IPv6: s.IPv6, Flows: s.Flows, Vary: s.Vary,
		AskedPPS: s.Rate, Duration: s.Duration.Seconds()}
}

// RunTrial checks the DUT and the sinks, sends, waits for the last
// frames to land and counts.
func RunTrial(ctx context.Context, e *bench.Env, dut bench.DUT, s TrialSpec) (Trial, error) {
	t := newTrial(dut, s)
	if err := dut.Alive(ctx, e); err != nil {
		return t, fmt.Errorf("%s is not alive before the trial: %w", dut.Name(), err)
	}
	vary := traffic.Vary(0)
	if s.Vary != "" {
		var err error
		if vary, err = traffic.ParseVary(s.Vary); err != nil {
			return t, err
		}
	}
	if vary&(traffic.VarySrcIP|traffic.VaryDstIP) != 0 && s.Flows > bench.MaxAddressFlows {
		return t, fmt.Errorf("flows %d varying addresses: the lab's address blocks hold %d", s.Flows, bench.MaxAddressFlows)
	}
	target := dut.Target(e, s.IPv6, vary&traffic.VaryDstIP != 0)
	frame := func(l4 traffic.L4) traffic.Frame {
		f := e.Frame(s.Size, l4, target, bench.BenchPort)
		if vary&traffic.VarySrcIP != 0 {
			// from a block routed back to the client: answers return
			f.Src = netip.AddrPortFrom(e.VariedSource(s.IPv6), f.Src.Port())
		}
		return f
	}
	f := frame(s.L4)
	f.Stamp = s.Latency
	// A DUT that opens TCP connections on a SYN only (xlb, as IPVS) drops
	// ACKs of connections never opened: their warm-up opens the flows
	// with SYNs, even a single one. (nft's conntrack is the other way
	// round: it picks up a mid-stream ACK, but takes an ACK after a lone
	// SYN as invalid.)
	so, ok := dut.(bench.SYNOpener)
	synWarmup := ok && so.OpensOnSYNOnly() && s.L4 == traffic.TCPAck
	if s.Warmup && (s.Flows > 1 || synWarmup) {
		warm := f
		if synWarmup {
			warm = frame(traffic.TCPSyn)
		}
		if err := e.Gen.Configure(warm, max(s.Flows, 1), vary); err != nil {
			return t, err
		}
		d := time.Duration(float64(max(s.Flows, 1)) / WarmupRate * float64(time.Second))
		if _, err := e.Gen.Send(ctx, traffic.SendOptions{Namespace: e.Topo.Client(), Interface: "c0", Rate: WarmupRate,
			Duration: max(d, time.Millisecond), CPUs: s.CPUs}); err != nil {
			return t, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := settle(e); err != nil {
			return t, err
		}
		t.Warmup = max(s.Flows, 1)
	}
	if err := e.Gen.Configure(f, max(s.Flows, 1), vary); err != nil {
		return t, err
	}
	if s.Latency {
		if err := e.Sink.TimeFrames(true); err != nil {
			return t, err
		}
		defer func() { _ = e.Sink.TimeFrames(false) }()
	}
	var returned func() (uint64, error)
	if s.Answered {
		undo, err := e.Answer()
		if err != nil {
			return t, err
		}
		defer func() { _ = undo() }()
		returned = func() (uint64, error) { c, err := e.Returns.Count(); return c.Packets, err }
	}
	var returnedBefore uint64
	if returned != nil {
		var err error
		if returnedBefore, err = returned(); err != nil {
			return t, err
		}
	}
	before, err := e.Sink.Count()
	if err != nil {
		return t, err
	}
	dc, counts := dut.(bench.DropCounter)
	var dropsBefore map[string]uint64
	if counts {
		if dropsBefore, err = dc.Drops(ctx); err != nil {
			return t, err
		}
	}
	inBefore, outBefore, err := e.RingDrops()
	if err != nil {
		return t, err
	}
	start := time.Now()
	if _, err := e.Gen.Send(ctx, traffic.SendOptions{Namespace: e.Topo.Client(), Interface: "c0", Rate: s.Rate,
		Duration: s.Duration, CPUs: s.CPUs}); err != nil {
		return t, err
	}
	after, err := settle(e)
	if err != nil {
		return t, err
	}
	t.ElapsedMs = time.Since(start).Milliseconds()
	sent, _, err := e.Gen.Sent()
	if err != nil {
		return t, err
	}
	t.Sent, t.Received = sent, after.Packets-before.Packets
	if returned != nil {
		// the answers land after the frames they answer
		n, err := settleCount(returned)
		if err != nil {
			return t, err
		}
		t.Returned = n - returnedBefore
	}
	inAfter, outAfter, err := e.RingDrops()
	if err != nil {
		return t, err
	}
	t.RingDropsIn, t.RingDropsOut = inAfter-inBefore, outAfter-outBefore
	if counts {
		dropsAfter, err := dc.Drops(ctx)
		if err != nil {
			return t, err
		}
		t.DUTDrops = bench.DropsSince(dropsBefore, dropsAfter)
	}
	t.Valid, t.Invalid = true, ""
	switch {
	case t.Received > t.Sent:
		t.Valid, t.Invalid = false, fmt.Sprintf("sinks counted %d frames, more than the %d sent", t.Received, t.Sent)
	case t.Returned > t.Received:
		t.Valid, t.Invalid = false, fmt.Sprintf("%d answers came back for %d frames received", t.Returned, t.Received)
	case e.Sink.Alive() != nil:
		t.Valid, t.Invalid = false, fmt.Sprintf("a sink stopped: %v", e.Sink.Alive())
	case s.Rate > 0 && float64(t.Sent) < (1-bench.PaceTolerance)*s.Rate*s.Duration.Seconds():
		t.Valid, t.Invalid = false, fmt.Sprintf("the generator sent %d of the %.0f frames asked: it cannot offer this rate", t.Sent, s.Rate*s.Duration.Seconds())
	case t.Sent == 0:
		t.Valid, t.Invalid = false, "nothing was sent"
	}
	if !t.Valid {
		t.Sent, t.Received, t.Returned = 0, 0, 0
		return t, nil
	}
	d := s.Duration.Seconds()
	t.Lost = t.Sent - t.Received
	t.LossPct = 100 * float64(t.Lost) / float64(t.Sent)
	t.TxPPS, t.RxPPS, t.ReturnPPS = float64(t.Sent)/d, float64(t.Received)/d, float64(t.Returned)/d
	if t.Answered = s.Answered; t.Answered {
		t.RoundTripLossPct = 100 * float64(t.Sent-t.Returned) / float64(t.Sent)
	}
	t.RxMbps = t.RxPPS * traffic.MeanSize(s.Size) * 8 / 1e6
	if s.Latency {
		l, err := e.Sink.Latency()
		if err != nil {
			return t, err
		}
		t.Latency = &l
	}
	return t, nil
}

// settleCount waits until count stops moving, at most half a second,
// and returns it.
func settleCount(count func() (uint64, error)) (uint64, error) {
	last, err := count()
	for i := 0; i < 25 && err == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		var now uint64
		if now, err = count(); err == nil && now == last {
			return now, nil
		}
		last = now
	}
	return last, err
}

// settle waits until the sinks' count stops moving (frames still in
// flight land), at most half a second.
func settle(e *bench.Env) (c traffic.SinkCount, err error) {
	_, err = settleCount(func() (uint64, error) {
		var err error
		c, err = e.Sink.Count()
		return c.Packets, err
	})
	return c, err
}

// SearchValid, SearchLossPct and SearchOffered let bench.Search read a
// frame trial.
func (t Trial) SearchValid() bool      { return t.Valid }
func (t Trial) SearchOffered() float64 { return t.TxPPS }

// SearchLossPct is the loss a search counts: the round trip's when the
// trial ran both ways (a frame counts once its answer is back).
func (t Trial) SearchLossPct() float64 {
	if t.Answered {
		return t.RoundTripLossPct
	}
	return t.LossPct
}
