// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"context"
	"fmt"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
)

// ConnSearch is a cps search's result: the highest rate of new
// connections with no connection error, for one DUT and core count.
type ConnSearch struct {
	DUT   string `json:"dut"`
	Cores int    `json:"cores"`
	// PayloadSize is the request's and the response's bytes
	PayloadSize int `json:"payload_size,omitempty"`
	bench.SearchResult
	// Held are the connections in the DUT's table after the verifying
	// trial (closed ones wait out their timeout there).
	Held uint64 `json:"held"`
	// Links are the DUT's and the client's rates in the last passing
	// verification trial (the DPVS table's columns).
	Links *bench.LinkRates `json:"links,omitempty"`
}

// cpsVerifications is how many trials in a row the rate a cps search
// finds must pass (the "verified twice").
const cpsVerifications = 2

// cpsSlots is how many client addresses and ports cps cycles through:
// a slot comes back after slots/rate seconds, later than the DUTs keep a
// closed connection (2 s), up to 2M connections/s.
const cpsSlots = 4 << 20

// throughputConns is how many keepalive connections the throughput
// scenario keeps busy: each has one segment in flight, and veth's
// rings hold 256 frames (more connections overrun them: losses and
// retransmissions that are the lab's, not the DUT's).
const throughputConns = 128

// connScenarioFor runs the XDP endpoints' part of the scenario.
func (r *Runner) connScenarioFor(ctx context.Context, dut bench.DUT) error {
	o := r.opts
	switch r.scenario {
	case "cps":
		for _, size := range r.cpsSizes() {
			if err := r.cpsSearches(ctx, dut, size); err != nil {
				return err
			}
		}
	case "cc":
		for _, n := range o.Conns {
			if err := r.holdConns(ctx, dut, n); err != nil {
				return err
			}
		}
	case "throughput":
		// many keepalive connections, each with one request of the
		// payload at a time, back to back
		return r.backToBack(ctx, dut, "keepalive", throughputConns, o.PayloadSize)
	case "latency":
		// one connection, one request at a time (netperf TCP_RR)
		return r.backToBack(ctx, dut, "rr", 1, o.PayloadSize)
	}
	return nil
}

// cpsSizes are the payload sizes cps searches: the sweep's, else the
// one size.
func (r *Runner) cpsSizes() []int {
	if len(r.opts.PayloadSizes) > 0 {
		return r.opts.PayloadSizes
	}
	return []int{r.opts.PayloadSize}
}

// cpsSearches runs a cps search per core count with requests and
// responses of size bytes.
func (r *Runner) cpsSearches(ctx context.Context, dut bench.DUT, size int) error {
	cl, err := newConnLab(r.env, dut, connSpec{senderCPU: r.opts.CPUs[0], slots: cpsSlots, requestSize: size, responseSize: size})
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, cores := range r.opts.Cores {
		if err := r.cpsSearch(ctx, cl, cores, size); err != nil {
			return err
		}
	}
	return nil
}

// cpus is the first n CPUs of the options'.
func (r *Runner) cpus(n int) []int { return r.opts.CPUs[:min(n, len(r.opts.CPUs))] }

// cpsSearch finds the highest zero-error connection rate through a DUT
// on the given number of cores.
func (r *Runner) cpsSearch(ctx context.Context, cl *connLab, cores, size int) error {
	p := bench.SearchParams{Precision: r.opts.Precision, MaxIterations: r.opts.MaxIterations, Verifications: cpsVerifications}
	var trials []ConnTrial
	res, err := bench.Search(ctx, p, func(rate float64) (ConnTrial, error) {
		role := "search"
		if rate == 0 {
			role = "max"
		}
		t, err := r.openTrial(ctx, cl, role, cores, rate)
		trials = append(trials, t)
		return t, err
	})
	if err != nil {
		return err
	}
	s := ConnSearch{DUT: cl.dut.Name(), Cores: cores, PayloadSize: size, SearchResult: res}
	// the columns come from the last trial at the rate found
	for i := len(trials) - 1; i >= 0; i-- {
		t := trials[i]
		if t.AskedCPS == res.RatePPS || (t.AskedCPS == 0 && t.OfferedCPS == res.RatePPS) {
			s.Held, s.Links = t.DUTConns, t.Links
			break
		}
	}
	r.res.ConnSearches = append(r.res.ConnSearches, s)
	return nil
}

// openTrial opens connections at rate (0: as fast as the client goes)
// for the trial's duration, then waits for every one to end.
func (r *Runner) openTrial(ctx context.Context, cl *connLab, role string, cores int, rate float64) (ConnTrial, error) {
	cpus := r.cpus(cores)
	if err := cl.dut.Alive(ctx, r.env); err != nil {
		return ConnTrial{}, fmt.Errorf("%s is not alive before the trial: %w", cl.dut.Name(), err)
	}
	before, err := cl.read(ctx)
	if err != nil {
		return ConnTrial{}, err
	}
	linksBefore, err := r.env.ReadLinks(cl.ifname)
	if err != nil {
		return ConnTrial{}, err
	}
	if err := cl.run(ctx, endpoint.Open, rate, 0, r.opts.Duration, cpus); err != nil {
		return ConnTrial{}, err
	}
	if err := cl.settle(ctx, cpus, false); err != nil {
		return ConnTrial{}, err
	}
	linksAfter, err := r.env.ReadLinks(cl.ifname)
	if err != nil {
		return ConnTrial{}, err
	}
	links := linksAfter.RatesOver(linksBefore, r.opts.Duration)
	after, err := cl.read(ctx)
	if err != nil {
		return ConnTrial{}, err
	}
	t := cl.trial(r.scenario, role, len(cpus), rate, r.opts.Duration, before, after)
	t.Links = &links
	if t.DUTConns, t.DUTMemBytes, t.DUTMemHow, err = r.env.DUTConns(ctx, cl.dut); err != nil {
		return t, err
	}
	r.connTrial(t)
	return t, nil
}

// holdConns opens n keepalive connections, then keeps them busy with a
// request each per keepalive interval for the trial's duration, and
// reads what the DUT holds for them.
func (r *Runner) holdConns(ctx context.Context, dut bench.DUT, n int) error {
	o := r.opts
	cl, err := newConnLab(r.env, dut, connSpec{senderCPU: o.CPUs[0], slots: n, requestSize: o.PayloadSize, responseSize: o.PayloadSize,
		keepalive: true, keepaliveInterval: o.Keepalive})
	if err != nil {
		return err
	}
	defer cl.Close()
	cpus := r.cpus(len(o.CPUs))
	// the sender stops after n opens; twice their time lets a client
	// slower than the rate asked (on the core a kernel DUT works on)
	// open them all
	opening := time.Duration(2*float64(n)/o.OpenRate*float64(time.Second)) + time.Second
	start, err := cl.read(ctx)
	if err != nil {
		return err
	}
	openStart := time.Now()
	if err := cl.run(ctx, endpoint.Open, o.OpenRate, uint64(n), opening, cpus); err != nil {
		return err
	}
	if err := cl.settle(ctx, cpus, true); err != nil {
		return err
	}
	// The measured round visits slot i at its start + i x keepalive/n,
	// and slot i's request is due a keepalive interval after it opened:
	// every visit finds its request due when the round starts a
	// keepalive interval, or the opening's length, after the first open.
	select {
	case <-time.After(time.Until(openStart.Add(max(o.Keepalive, opening)))):
	case <-ctx.Done():
		return ctx.Err()
	}
	before, err := cl.read(ctx)
	if err != nil {
		return err
	}
	// every slot once per keepalive interval
	visits := float64(n) / o.Keepalive.Seconds()
	if err := cl.run(ctx, endpoint.Tick, visits, 0, o.Duration, cpus); err != nil {
		return err
	}
	if err := cl.settle(ctx, cpus, true); err != nil {
		return err
	}
	after, err := cl.read(ctx)
	if err != nil {
		return err
	}
	// rates are the measured round's; connections, errors and the
	// DUT's drops the whole run's, the opening's included
	t := cl.trial(r.scenario, "cc", len(cpus), 0, o.Duration, before, after)
	whole := after.client.Sub(start.client)
	t.Client.Attempted, t.Client.Established = whole.Attempted, whole.Established
	t.Errors = whole.Errors()
	t.DUTDrops = bench.DropsSince(start.drops, after.drops)
	t.Handshake = summarize(after.handshake)
	if t.DUTConns, t.DUTMemBytes, t.DUTMemHow, err = r.env.DUTConns(ctx, dut); err != nil {
		return err
	}
	if t.Client.Established < uint64(n) && t.Valid {
		t.Invalid = fmt.Sprintf("%d of the %d connections were established", t.Client.Established, n)
	}
	r.connTrial(t)
	// close them all, so that the next DUT starts clean
	return cl.run(ctx, endpoint.Close, 0, uint64(n), 10*time.Second, cpus)
}

// backToBack opens conns keepalive connections whose requests of size
// bytes follow each other at once, for the trial's duration: the
// request/response latency (one connection: TCP_RR) and the throughput
// (many connections).
func (r *Runner) backToBack(ctx context.Context, dut bench.DUT, role string, conns, size int) error {
	o := r.opts
	cl, err := newConnLab(r.env, dut, connSpec{senderCPU: o.CPUs[0], slots: conns, requestSize: size, responseSize: size, keepalive: true})
	if err != nil {
		return err
	}
	defer cl.Close()
	cpus := r.cpus(len(o.CPUs))
	before, err := cl.read(ctx)
	if err != nil {
		return err
	}
	if err := cl.client.StopBackToBackAfter(o.Duration); err != nil {
		return err
	}
	start := time.Now()
	if err := cl.run(ctx, endpoint.Open, 0, uint64(conns), time.Second, cpus); err != nil {
		return err
	}
	// the ping-pongs stop by themselves at the end of the duration
	time.Sleep(time.Until(start.Add(o.Duration + 20*time.Millisecond)))
	if err := cl.settle(ctx, cpus, true); err != nil {
		return err
	}
	after, err := cl.read(ctx)
	if err != nil {
		return err
	}
	t := cl.trial(r.scenario, role, len(cpus), 0, o.Duration, before, after)
	r.connTrial(t)
	return cl.run(ctx, endpoint.Close, 0, uint64(conns), 10*time.Second, cpus)
}

// connTrial records a trial and reports progress.
func (r *Runner) connTrial(t ConnTrial) {
	r.res.ConnTrials = append(r.res.ConnTrials, t)
	r.done++
	if r.opts.Progress == nil {
		return
	}
	if r.opts.JSONProgress {
		bench.WriteJSONLine(r.opts.Progress, t)
		return
	}
	rate := "max"
	if t.AskedCPS > 0 {
		rate = fmt.Sprintf("%.0f cps", t.AskedCPS)
	}
	outcome := fmt.Sprintf("%d opened, %d closed, %d errors, %.0f cps, %.0f req/s, handshake p50 %.1f us",
		t.Client.Attempted, t.Client.Closed, t.Errors, t.CPS, t.RequestRate, t.Handshake.P50Us)
	if t.Role == "rr" || t.Role == "keepalive" {
		outcome = fmt.Sprintf("%.0f req/s, %.1f Mbps, p50 %.1f us, p99 %.1f us, %d errors",
			t.RequestRate, t.ResponseMbps, t.Response.P50Us, t.Response.P99Us, t.Errors)
	}
	if !t.Valid {
		outcome = "invalid: " + t.Invalid
	}
	fmt.Fprintf(r.opts.Progress, "[%s] %-7s %-9s %d core(s) %s -> %s\n", r.scenario, t.DUT, t.Role, t.Cores, rate, outcome)
}
