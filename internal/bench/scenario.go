// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/dpcost"
	"github.com/xlb-dev/xlb/internal/lab"
)

// Scenarios are what `xlb bench` runs.
var Scenarios = []string{"pps", "frame-sizes", "rfc2544", "multiflow", "datapath",
	"cps", "cc", "throughput", "latency", "redis", "http"}

// connScenarios are the scenarios of connections through the DUTs (the
// XDP endpoints and real applications): their DUTs are xlb, nft,
// haproxy and direct.
var connScenarios = []string{"cps", "cc", "throughput", "latency", "redis", "http"}

// ConnDUTNames are the DUTs the connection scenarios take.
var ConnDUTNames = []string{"xlb", "nft", "haproxy", "direct"}

// Options are a run's parameters; zero fields take the defaults.
type Options struct {
	DUTs          []string      `json:"duts"`
	Duration      time.Duration `json:"trial_duration_ns"`
	Sizes         []int         `json:"frame_sizes"`
	Flows         []int         `json:"flows"`
	Variations    []string      `json:"variations,omitempty"`
	L4            L4            `json:"l4"`
	IPv6          bool          `json:"ipv6"`
	FixedRate     float64       `json:"fixed_rate_pps"`     // frame-sizes: the fixed offered rate
	LossTolerance float64       `json:"loss_tolerance_pct"` // PDR
	Precision     float64       `json:"precision"`
	MaxIterations int           `json:"max_iterations"`
	Repeat        int           `json:"repeat,omitempty"` // datapath: BPF_PROG_RUN runs per figure
	Cores         []int         `json:"cores,omitempty"`  // cps: sender core counts
	Conns         []int         `json:"conns,omitempty"`  // cc: concurrent connections held
	Keepalive     time.Duration `json:"keepalive_ns,omitempty"`
	OpenRate      float64       `json:"open_rate_cps,omitempty"` // cc: how fast connections are opened
	PayloadSize   int           `json:"payload_size,omitempty"`  // XDP endpoints: request and response bytes
	CPUs          []int         `json:"cpus"`
	Reals         int           `json:"reals"`
	LabName       string        `json:"lab_name"`
	LabNet        uint8         `json:"lab_net"`
	Self          string        `json:"-"` // the xlb binary (for the xlb DUT)
	Progress      io.Writer     `json:"-"` // nil: quiet
	JSONProgress  bool          `json:"-"`
}

// withDefaults fills in what the scenario's reference report uses.
func (o Options) withDefaults(scenario string) Options {
	if scenario == "datapath" {
		o.DUTs = []string{"xlb"} // the program itself, against XDP_TX
		if o.Repeat == 0 {
			o.Repeat = 1_000_000
		}
	}
	if slices.Contains(connScenarios, scenario) {
		o = o.connDefaults(scenario)
	}
	if len(o.DUTs) == 0 {
		o.DUTs = DUTNames
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 128, 256, 512, 1024, 1280, 1518}
		if scenario == "pps" || scenario == "multiflow" {
			o.Sizes = []int{64}
		}
	}
	if len(o.Flows) == 0 {
		o.Flows = map[string][]int{"pps": {1, 1000, 1_000_000}, "multiflow": {1000, 10000, 65536, 1_000_000},
			"datapath": {1_000, 10_000, 100_000, 1_000_000, 10_000_000}}[scenario]
		if o.Flows == nil {
			o.Flows = []int{1}
		}
	}
	if len(o.Variations) == 0 && scenario == "multiflow" {
		for _, l := range []string{"l2", "l3", "l4"} {
			for _, w := range []string{"src", "dst", "both"} {
				o.Variations = append(o.Variations, l+"-"+w)
			}
		}
	}
	if o.L4 == "" {
		o.L4 = UDP
	}
	if o.FixedRate == 0 {
		o.FixedRate = 500_000
	}
	if o.LossTolerance == 0 {
		o.LossTolerance = 0.1
	}
	if o.Precision == 0 {
		o.Precision = 0.005
	}
	if o.MaxIterations == 0 {
		o.MaxIterations = 12
	}
	if len(o.CPUs) == 0 {
		o.CPUs = []int{0}
	}
	if o.Reals == 0 {
		o.Reals = 2
	}
	if o.LabName == "" {
		o.LabName = "xlbbench"
	}
	if o.LabNet == 0 {
		o.LabNet = 160
	}
	return o
}

// validate names the first wrong option.
func (o Options) validate(scenario string) error {
	if !slices.Contains(Scenarios, scenario) {
		return fmt.Errorf("scenario %q: want one of %s", scenario, strings.Join(Scenarios, ", "))
	}
	conn := slices.Contains(connScenarios, scenario)
	for _, d := range o.DUTs {
		if _, err := NewDUT(d); err != nil {
			return err
		}
		if conn != slices.Contains(ConnDUTNames, d) && (conn || !slices.Contains(DUTNames, d) && d != "sink") {
			want := DUTNames
			if conn {
				want = ConnDUTNames
			}
			return fmt.Errorf("DUT %s: %s takes %s", d, scenario, strings.Join(want, ", "))
		}
	}
	if conn {
		if err := o.validateConn(); err != nil {
			return err
		}
	}
	for _, s := range o.Sizes {
		if s < MinFrameSize || s > MaxJumboSize {
			return fmt.Errorf("frame size %d: want %d to %d", s, MinFrameSize, MaxJumboSize)
		}
	}
	for _, f := range o.Flows {
		if scenario == "datapath" && (f < 1 || f > 50_000_000) {
			return fmt.Errorf("datapath: table size %d: want 1 to 50000000 connections", f)
		}
		if scenario != "datapath" && (f < 1 || f > MaxFlows) {
			return fmt.Errorf("flows %d: want 1 to %d", f, MaxFlows)
		}
	}
	if o.Repeat < 0 {
		return fmt.Errorf("repeat %d: want a positive count", o.Repeat)
	}
	for _, v := range o.Variations {
		if _, err := ParseVary(v); err != nil {
			return err
		}
	}
	switch {
	case o.Duration < 10*time.Millisecond:
		return fmt.Errorf("duration %v: want at least 10ms", o.Duration)
	case o.LossTolerance < 0 || o.LossTolerance >= 100:
		return fmt.Errorf("loss tolerance %v%%: want 0 to 100", o.LossTolerance)
	case o.Precision <= 0 || o.Precision >= 1:
		return fmt.Errorf("precision %v: want a fraction of the maximum, e.g. 0.005", o.Precision)
	case o.MaxIterations < 1:
		return fmt.Errorf("max iterations %d: want at least 1", o.MaxIterations)
	case o.Reals < 1 || o.Reals > 50:
		return fmt.Errorf("reals %d: want 1 to 50", o.Reals)
	}
	return nil
}

// OptionError is Run's error for a wrong scenario or option: nothing ran.
type OptionError struct{ Err error }

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Run runs a scenario over every DUT of the options in one lab and
// returns the results (Write stores them).
func Run(ctx context.Context, scenario string, opts Options) (*Results, error) {
	opts = opts.withDefaults(scenario)
	if err := opts.validate(scenario); err != nil {
		return nil, &OptionError{err}
	}
	res := newResults(scenario, opts)
	if scenario == "datapath" {
		return res, runDatapath(res, opts)
	}
	conn := slices.Contains(connScenarios, scenario)
	env, err := NewEnv(lab.Topology{Name: opts.LabName, Net: opts.LabNet, Reals: opts.Reals}, opts.Self)
	if err != nil {
		return nil, err
	}
	if big := slices.Max(opts.Sizes); big > MaxFrameSize {
		if err := env.SetMTU(big - 14 - FCS); err != nil {
			env.Close()
			return nil, err
		}
	}
	defer env.Close()
	r := &runner{env: env, opts: opts, res: res, scenario: scenario, start: time.Now()}
	r.planned = r.plan()
	for _, name := range opts.DUTs {
		dut, _ := NewDUT(name)
		if err := dut.Setup(ctx, env); err != nil {
			return res, fmt.Errorf("set up %s: %w", name, err)
		}
		res.DUTs[name] = dut.Version(env)
		var err error
		if conn {
			err = r.connDUT(ctx, dut)
		} else if err = r.settle(ctx, dut); err == nil {
			err = r.scenarioFor(ctx, dut)
		}
		if terr := dut.Teardown(env); err == nil && terr != nil {
			err = fmt.Errorf("tear down %s: %w", name, terr)
		}
		if err != nil {
			return res, err
		}
	}
	res.Finished = time.Now()
	return res, nil
}

// runDatapath measures the data path's per-packet cost through
// BPF_PROG_RUN for each connection-table size of --flows (the table of
// issue 2; no lab, no DUTs).
func runDatapath(res *Results, o Options) error {
	progress := func(line string) {
		if o.Progress != nil && !o.JSONProgress {
			fmt.Fprintf(o.Progress, "[datapath] %s\n", line)
		}
	}
	table, err := dpcost.Measure(dpcost.Options{Conns: o.Flows, Repeat: o.Repeat, Namespace: o.LabName + "-cost"}, progress)
	if err != nil {
		return err
	}
	res.Cost = &table
	res.DUTs["xlb"] = "xlb " + res.Revision + " (bpf/xlb.bpf.c)"
	res.DUTs["xdp-tx"] = "bpf/bench/xdp_tx.bpf.c: the baseline"
	res.Finished = time.Now()
	return nil
}

// runner runs one scenario's trials and records them.
type runner struct {
	env           *Env
	opts          Options
	res           *Results
	scenario      string
	start         time.Time
	planned, done int
	warm          string // the flows the DUT has seen last (see trial)
}

// settle runs a discarded second (at most) at full rate through a DUT just set
// up: the first trial after an XDP attach otherwise measures the lab
// settling (seen here: twice the rate, half of it lost), not the DUT.
func (r *runner) settle(ctx context.Context, dut DUT) error {
	s := r.spec(64, 1, "", 0)
	s.Duration = min(time.Second, max(r.opts.Duration, 200*time.Millisecond))
	_, err := r.env.RunTrial(ctx, dut, s)
	return err
}

// trialsPerSearch is what the ETA expects a search to take: the maximum,
// a few halvings, the verification (a search that passes at the maximum
// takes one trial; the estimate corrects itself as searches end).
const trialsPerSearch = 4

// plan estimates the number of trials, for the ETA.
func (r *runner) plan() int {
	per := map[string]int{
		"pps":         len(r.opts.Flows),
		"frame-sizes": 2 * len(r.opts.Sizes),
		"rfc2544":     len(r.opts.Sizes) * 2 * trialsPerSearch,
		"multiflow":   len(r.opts.Sizes) * len(r.opts.Variations) * len(r.opts.Flows) * trialsPerSearch,
	}[r.scenario]
	return per * len(r.opts.DUTs)
}

func (r *runner) scenarioFor(ctx context.Context, dut DUT) error {
	switch r.scenario {
	case "pps":
		for _, flows := range r.opts.Flows {
			if _, err := r.trial(ctx, dut, "max", r.spec(64, flows, varyFor(flows), 0)); err != nil {
				return err
			}
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
	}
	return nil
}

// varyFor is how the pps scenario makes many flows: client addresses
// (ports give at most 65536).
func varyFor(flows int) string {
	if flows <= 1 {
		return ""
	}
	return "l3-src"
}

// notApplicable says why a multi-flow cell is not measured, or "".
func notApplicable(dut DUT, vary string, flows int) string {
	v, _ := ParseVary(vary)
	switch {
	case v&(VarySrcPort|VaryDstPort) != 0 && flows > 65536:
		return "ports give at most 65536 flows"
	case v&VaryDstMAC != 0:
		return "frames would not be addressed to the DUT"
	case v&VaryDstIP != 0 && dut.Balances():
		return "a balancer's destination is its VIP"
	}
	return ""
}

func (r *runner) spec(size, flows int, vary string, rate float64) TrialSpec {
	return TrialSpec{Size: size, L4: r.opts.L4, IPv6: r.opts.IPv6, Flows: flows, Vary: vary, Rate: rate,
		Duration: r.opts.Duration, CPUs: r.opts.CPUs}
}

// searches runs the NDR and the PDR search of one frame size.
func (r *runner) searches(ctx context.Context, dut DUT, size, flows int, vary string) error {
	if err := r.search(ctx, dut, size, flows, vary, "ndr", 0); err != nil {
		return err
	}
	return r.search(ctx, dut, size, flows, vary, "pdr", r.opts.LossTolerance)
}

func (r *runner) search(ctx context.Context, dut DUT, size, flows int, vary, kind string, tolerance float64) error {
	p := SearchParams{LossTolerancePct: tolerance, Precision: r.opts.Precision, MaxIterations: r.opts.MaxIterations}
	n := 0
	res, err := Search(ctx, p, func(rate float64) (Trial, error) {
		n++
		return r.trial(ctx, dut, kind, r.spec(size, flows, vary, rate))
	})
	if err != nil {
		return err
	}
	r.planned += n - trialsPerSearch
	r.res.Searches = append(r.res.Searches, SearchRecord{DUT: dut.Name(), Kind: kind, Size: size, Flows: flows, Vary: vary,
		TolerancePct: tolerance, SearchResult: res})
	return nil
}

// trial runs and records one trial and reports progress.
func (r *runner) trial(ctx context.Context, dut DUT, role string, s TrialSpec) (Trial, error) {
	// warm up when the flows change: a new flow set for the DUT
	if key := fmt.Sprintf("%s %d %s %v %s", dut.Name(), s.Flows, s.Vary, s.IPv6, s.L4); key != r.warm {
		s.Warmup, r.warm = true, key
	}
	t, err := r.env.RunTrial(ctx, dut, s)
	if err != nil {
		return t, err
	}
	t.Scenario, t.Role = r.scenario, role
	r.res.Trials = append(r.res.Trials, t)
	r.done++
	r.report(t)
	return t, nil
}

func (r *runner) report(t Trial) {
	if r.opts.Progress == nil {
		return
	}
	eta := time.Duration(0)
	if r.done > 0 && r.planned > r.done {
		eta = time.Since(r.start) / time.Duration(r.done) * time.Duration(r.planned-r.done)
	}
	if r.opts.JSONProgress {
		writeJSONLine(r.opts.Progress, struct {
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
	fmt.Fprintf(r.opts.Progress, "[%s] %-7s %-5s trial %d/~%d  %d B %s, %s  -> %s  ETA %s\n",
		r.scenario, t.DUT, t.Role, r.done, max(r.planned, r.done), t.Size, flows, rate, outcome, eta.Round(time.Second))
}
