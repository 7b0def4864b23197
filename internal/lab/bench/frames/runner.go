// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/dram"
	"github.com/xlb-dev/xlb/internal/lab/bench/profile"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// NewRunner returns the runner of a frame scenario in env, recording
// into res; its ETA counts from now.
func NewRunner(env *bench.Env, opts bench.Options, scenario string, res *FrameResults) *Runner {
	r := &Runner{env: env, opts: opts, res: res, scenario: scenario, start: time.Now()}
	r.planned = r.plan()
	return r
}

// Runner runs one frame scenario's trials and records them.
type Runner struct {
	env           *bench.Env
	opts          bench.Options
	res           *FrameResults
	scenario      string
	start         time.Time
	planned, done int
	warm          string          // the flows the DUT has seen last (see trial)
	profiled      map[string]bool // DUTs with a profile (--profile)
}

// Settle runs a discarded second (at most) at full rate through a DUT just set
// up: the first trial after an XDP attach otherwise measures the lab
// settling (seen here: twice the rate, half of it lost), not the DUT.
func (r *Runner) Settle(ctx context.Context, dut bench.DUT) error {
	s := r.spec(64, 1, "", 0)
	s.Duration = min(time.Second, max(r.opts.Duration, 200*time.Millisecond))
	_, err := RunTrial(ctx, r.env, dut, s)
	return err
}

// dramReads is how many dependent reads measure one's latency: about a
// second.
const dramReads = 5_000_000

// trialsPerSearch is what the ETA expects a search to take: the maximum,
// a few halvings, the verification (a search that passes at the maximum
// takes one trial; the estimate corrects itself as searches end).
const trialsPerSearch = 4

// plan estimates the number of trials, for the ETA.
func (r *Runner) plan() int {
	per := map[string]int{
		"pps":         2 * len(r.opts.Flows),
		"frame-sizes": 2 * len(r.opts.Sizes),
		"rfc2544":     len(r.opts.Sizes) * 2 * trialsPerSearch,
		"multiflow":   len(r.opts.Sizes)*len(r.opts.Variations)*len(r.opts.Flows)*trialsPerSearch + curveTrials,
	}[r.scenario]
	return per * len(r.opts.DUTs)
}

// RunDUT runs the scenario's trials through dut, which is set up and
// settled.
func (r *Runner) RunDUT(ctx context.Context, dut bench.DUT) error {
	r.warm = "" // set up and settled: it holds no flows
	switch r.scenario {
	case "pps":
		for _, flows := range r.opts.Flows {
			if _, err := r.trial(ctx, dut, "max", r.spec(64, flows, varyFor(flows), 0)); err != nil {
				return err
			}
			// both directions, as the DPVS report's UDP PPS: the
			// reals answer every frame; flows are client ports (at
			// most 65,536). Right after the same count one way: a
			// stateful DUT's table still holds a larger count's flows
			// after it
			if flows > maxAnsweredFlows {
				continue
			}
			s := r.spec(64, flows, "", 0)
			if flows > 1 {
				s.Vary = "l4-src"
			}
			s.Answered = true
			if _, err := r.trial(ctx, dut, "both", s); err != nil {
				return err
			}
		}
		if r.res.DRAMRead == nil {
			// the read a table lookup pays at the worst, over a region
			// as large as the xlb DUT's IPv4 table
			table := cmp.Or(bench.XLBShapeFor(r.scenario, r.opts).ConnTable, datapath.DefaultConns4)
			d, err := dram.Chase(datapath.ConnTableBytes(false, uint32(table)), dramReads)
			if err != nil {
				return err
			}
			r.res.DRAMRead = &d
		}
	case "frame-sizes":
		for _, size := range r.opts.Sizes {
			if _, err := r.trial(ctx, dut, "fixed", r.spec(size, 1, "", r.opts.FixedRate)); err != nil {
				return err
			}
			if _, err := r.trial(ctx, dut, "max", r.spec(size, 1, "", 0)); err != nil {
				return err
			}
		}
	case "rfc2544":
		for _, size := range r.opts.Sizes {
			if err := r.searches(ctx, dut, size, 1, ""); err != nil {
				return err
			}
		}
	case "multiflow":
		for _, size := range r.opts.Sizes {
			for _, v := range r.opts.Variations {
				for _, flows := range r.opts.Flows {
					if why := notApplicable(dut, v, flows); why != "" {
						r.res.Skipped = append(r.res.Skipped, Skip{DUT: dut.Name(), Size: size, Vary: v, Flows: flows, Why: why})
						r.planned -= trialsPerSearch
						continue
					}
					if err := r.search(ctx, dut, size, flows, v, "ndr", 0); err != nil {
						return err
					}
				}
			}
		}
		return r.curve(ctx, dut)
	}
	return nil
}

// maxAnsweredFlows are the most flows the trials in both directions
// make: client ports.
const maxAnsweredFlows = 65536

// varyFor is how the pps scenario makes many flows: client addresses
// (ports give at most 65536).
func varyFor(flows int) string {
	if flows <= 1 {
		return ""
	}
	return "l3-src"
}

// notApplicable says why a multi-flow cell is not measured, or "".
func notApplicable(dut bench.DUT, vary string, flows int) string {
	v, _ := traffic.ParseVary(vary)
	switch {
	case v&(traffic.VarySrcPort|traffic.VaryDstPort) != 0 && flows > 65536:
		return "ports give at most 65536 flows"
	case v&traffic.VaryDstMAC != 0:
		return "frames would not be addressed to the DUT"
	case v&traffic.VaryDstIP != 0 && dut.Balances():
		return "a balancer's destination is its VIP"
	}
	return ""
}

func (r *Runner) spec(size, flows int, vary string, rate float64) TrialSpec {
	return TrialSpec{Size: size, L4: r.opts.L4, IPv6: r.opts.IPv6, Flows: flows, Vary: vary, Rate: rate,
		Duration: r.opts.Duration, CPUs: r.opts.CPUs, Answered: BothWays(r.scenario, r.opts)}
}

// BothWays says whether a scenario's trials run in both directions: the
// multi-flow matrix's, as VSPERF's Phy2Phy and PVP tests (their Rx fps
// add both ports'), unless --one-way. The reals answer every frame back
// through the DUT (bench.Env.Answer); a search counts a frame lost
// unless its answer came back.
func BothWays(scenario string, o bench.Options) bool {
	return scenario == "multiflow" && !o.OneWay
}

// searches runs the NDR and the PDR search of one frame size.
func (r *Runner) searches(ctx context.Context, dut bench.DUT, size, flows int, vary string) error {
	if err := r.search(ctx, dut, size, flows, vary, "ndr", 0); err != nil {
		return err
	}
	return r.search(ctx, dut, size, flows, vary, "pdr", r.opts.LossTolerance)
}

// search finds a cell's rate: --best-of searches (at least one), the
// best counting, then, with --verify-duration, one long trial at it.
func (r *Runner) search(ctx context.Context, dut bench.DUT, size, flows int, vary, kind string, tolerance float64) error {
	p := bench.SearchParams{LossTolerancePct: tolerance, Precision: r.opts.Precision, MaxIterations: r.opts.MaxIterations}
	rec := SearchRecord{DUT: dut.Name(), Kind: kind, Size: size, Flows: flows, Vary: vary, TolerancePct: tolerance}
	for try := 0; try < max(r.opts.BestOf, 1); try++ {
		n := 0
		res, err := bench.Search(ctx, p, func(rate float64) (Trial, error) {
			n++
			return r.trial(ctx, dut, kind, r.spec(size, flows, vary, rate))
		})
		if err != nil {
			return err
		}
		r.planned += n - trialsPerSearch
		if try == 0 || res.RatePPS > rec.RatePPS {
			rec.SearchResult = res
		}
		if r.opts.BestOf > 1 {
			rec.Tries = append(rec.Tries, res.RatePPS)
		}
	}
	if r.opts.VerifyDuration > 0 && rec.RatePPS > 0 {
		s := r.spec(size, flows, vary, rec.RatePPS)
		if rec.Iterations == 0 {
			// passed as fast as the generator goes (on veth the DUT
			// holds the generator back on their shared CPU): verify the
			// same way, since paced at its own limit the generator
			// cannot offer the rate (bench.Search's verifications)
			s.Rate = 0
		}
		s.Duration = r.opts.VerifyDuration
		t, err := r.trial(ctx, dut, "final-"+kind, s)
		if err != nil {
			return err
		}
		rec.Final = &FinalTrial{Seconds: s.Duration.Seconds(), Unpaced: s.Rate == 0, OfferedPPS: t.TxPPS, Valid: t.Valid,
			LossPct: t.SearchLossPct(), Passed: t.Valid && t.SearchLossPct() <= tolerance}
	}
	r.res.Searches = append(r.res.Searches, rec)
	return nil
}

// forget has a DUT that keeps flows forget them before a new cell of
// the matrix, as VSPERF starts each test on a fresh switch: UDP flows
// are kept a minute, and a cell of 1M would leave the next one a full
// table. A DUT restarted settles again (Settle).
func (r *Runner) forget(ctx context.Context, dut bench.DUT) error {
	f, ok := dut.(bench.Forgetter)
	if r.scenario != "multiflow" || r.warm == "" || !ok {
		return nil
	}
	restarted, err := f.Forget(ctx, r.env)
	if err != nil {
		return fmt.Errorf("%s: forget the last cell's flows: %w", dut.Name(), err)
	}
	r.res.Forgotten++
	if !restarted {
		return nil
	}
	return r.Settle(ctx, dut)
}

// trial runs and records one trial and reports progress.
func (r *Runner) trial(ctx context.Context, dut bench.DUT, role string, s TrialSpec) (Trial, error) {
	// warm up when the flows change: a new flow set for the DUT
	if key := fmt.Sprintf("%s %d %s %v %s", dut.Name(), s.Flows, s.Vary, s.IPv6, s.L4); key != r.warm {
		if err := r.forget(ctx, dut); err != nil {
			return Trial{}, err
		}
		s.Warmup, r.warm = true, key
	}
	var rec *profile.Recording
	if r.opts.Profile && s.Rate == 0 && !r.profiled[dut.Name()] {
		var err error
		if rec, err = profile.Start(os.TempDir()); err != nil {
			return Trial{}, err
		}
	}
	t, err := r.runCovering(ctx, dut, s)
	if rec != nil {
		stacks, n, perr := rec.Stop(ctx)
		if err == nil && perr != nil {
			return t, perr
		}
		what := fmt.Sprintf("%s, %d B, %d flows %s, as fast as the generator goes, %v with its warm-up", r.scenario, s.Size, s.Flows, s.Vary, s.Duration)
		r.res.Profiles = append(r.res.Profiles, profile.Profile{DUT: dut.Name(), Trial: what, Samples: n, Stacks: stacks})
		if r.profiled == nil {
			r.profiled = map[string]bool{}
		}
		r.profiled[dut.Name()] = true
	}
	if err != nil {
		return t, err
	}
	t.Scenario, t.Role = r.scenario, role
	r.res.Trials = append(r.res.Trials, t)
	r.done++
	r.report(t)
	return t, nil
}

func (r *Runner) report(t Trial) {
	if r.opts.Progress == nil {
		return
	}
	eta := time.Duration(0)
	if r.done > 0 && r.planned > r.done {
		eta = time.Since(r.start) / time.Duration(r.done) * time.Duration(r.planned-r.done)
	}
	if r.opts.JSONProgress {
		bench.WriteJSONLine(r.opts.Progress, struct {
			Trial
			Done, Planned int
			ETASeconds    float64 `json:"eta_s"`
		}{t, r.done, r.planned, eta.Seconds()})
		return
	}
	rate := "max"
	if t.AskedPPS > 0 {
		rate = fmt.Sprintf("%.3f Mpps", t.AskedPPS/1e6)
	}
	flows := fmt.Sprintf("%d flows", t.Flows)
	if t.Vary != "" {
		flows += " " + t.Vary
	}
	outcome := fmt.Sprintf("rx %.3f Mpps, loss %.3f%%", t.RxPPS/1e6, t.LossPct)
	if !t.Valid {
		outcome = "invalid: " + t.Invalid
	}
	fmt.Fprintf(r.opts.Progress, "[%s] %-7s %-5s trial %d/~%d  %s B %s, %s  -> %s  ETA %s\n",
		r.scenario, t.DUT, t.Role, r.done, max(r.planned, r.done), traffic.SizeName(t.Size), flows, rate, outcome, eta.Round(time.Second))
}
