// SPDX-License-Identifier: Apache-2.0

package run

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	"github.com/xlb-dev/xlb/internal/lab/bench/cfgscale"
	"github.com/xlb-dev/xlb/internal/lab/bench/clusterbench"
	"github.com/xlb-dev/xlb/internal/lab/bench/conns"
	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Scenarios are what `xlb bench` runs.
var Scenarios = []string{"pps", "frame-sizes", "rfc2544", "multiflow", "datapath",
	"cps", "cc", "throughput", "latency", "redis", "http", "synflood", "apply", "cluster"}

// connScenarios are the scenarios of connections through the DUTs (the
// XDP endpoints and real applications): their DUTs are xlb, nft,
// haproxy and direct.
var connScenarios = []string{"cps", "cc", "throughput", "latency", "redis", "http", "synflood"}

// withDefaults fills in what the scenario's reference report uses.
func withDefaults(o bench.Options, scenario string) bench.Options {
	if scenario == "apply" {
		o.DUTs = []string{"xlb", "nft"}
		if len(o.Services) == 0 {
			o.Services = []int{1000, 10000}
		}
	}
	if scenario == "cluster" {
		o.DUTs = []string{"xlb"}
		if len(o.Nodes) == 0 {
			o.Nodes = []int{1, 2, 3}
		}
		if o.Streams == 0 {
			o.Streams = 150
		}
		if o.Reals == 0 {
			o.Reals = 3
		}
	}
	if scenario == "datapath" {
		o.DUTs = []string{"xlb"} // the program itself, against XDP_TX
		if o.Repeat == 0 {
			o.Repeat = 1_000_000
		}
	}
	if slices.Contains(connScenarios, scenario) {
		o = connDefaults(o, scenario)
	}
	if len(o.DUTs) == 0 {
		o.DUTs = bench.DUTNames
		if scenario == "frame-sizes" {
			// the limit, the generator into a sink, in the same run;
			// last: a DUT attached after the sink left the interface
			// got the generator's frames only in part (veth, 6.18)
			o.DUTs = append(slices.Clone(bench.DUTNames), "sink")
		}
	}
	o.DUTs = withWorkers(o.DUTs, o.Workers, scenario, o)
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
		if scenario == "multiflow" {
			// the VSPERF report's whole matrix in under 2 hours here:
			// short trials (its own were 60 s, --duration 60s) and a
			// final verification of seconds (--verify-duration). A
			// cell costs about 12 s: its DUT forgetting the last
			// cell's flows and settling, the warm-up, a 2 s trial at
			// the maximum (most pass there on veth), the 3 s final;
			// 545 cells of 5 DUTs
			o.Duration = 2 * time.Second
			if o.VerifyDuration == 0 {
				o.VerifyDuration = 3 * time.Second
			}
		}
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 128, 256, 512, 1024, 1280, 1518}
		switch scenario {
		case "pps":
			o.Sizes = []int{64}
		case "multiflow":
			o.Sizes = []int{64, 128, 256, 512, 1518} // the VSPERF report's
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
		o.L4 = traffic.UDP
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
		if scenario == "cps" || scenario == "cc" {
			o.Reals = 8 // as the DPVS report's CPS/CC table
		}
		if scenario == "latency" || scenario == "redis" || scenario == "http" {
			// one server for every DUT: direct reaches only one, and
			// a balancer's row against it must not have two
			o.Reals = 1
		}
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
func validate(o bench.Options, scenario string) error {
	if !slices.Contains(Scenarios, scenario) {
		return fmt.Errorf("scenario %q: want one of %s", scenario, strings.Join(Scenarios, ", "))
	}
	for _, n := range o.Workers {
		if n < 0 || n > runtime.NumCPU() {
			return fmt.Errorf("%d workers: want 0 to %d (this machine's CPUs)", n, runtime.NumCPU())
		}
	}
	if scenario == "apply" {
		for _, n := range o.Services {
			if n < 1 || n > 65536 {
				return fmt.Errorf("apply: %d services: want 1 to 65536", n)
			}
		}
		return nil
	}
	if scenario == "cluster" {
		for _, n := range o.Nodes {
			if n < 1 || n > 8 {
				return fmt.Errorf("cluster: %d nodes: want 1 to 8", n)
			}
		}
		if o.Streams < 1 || o.Streams > 1000 {
			return fmt.Errorf("cluster: %d streams: want 1 to 1000", o.Streams)
		}
		if o.Duration < time.Second {
			return fmt.Errorf("cluster: duration %v: want at least 1s", o.Duration)
		}
		return nil
	}
	conn := slices.Contains(connScenarios, scenario)
	for _, d := range o.DUTs {
		if _, err := NewDUT(d, scenario, o); err != nil {
			return err
		}
		d, _ := bench.SplitWorkers(d)
		if conn != slices.Contains(bench.ConnDUTNames, d) && (conn || !slices.Contains(bench.DUTNames, d) && d != "sink") {
			want := bench.DUTNames
			if conn {
				want = bench.ConnDUTNames
			}
			return fmt.Errorf("DUT %s: %s takes %s", d, scenario, strings.Join(want, ", "))
		}
	}
	if o.BestOf < 0 || o.BestOf > 100 {
		return fmt.Errorf("best of %d: want 1 to 100 searches a cell", o.BestOf)
	}
	if o.VerifyDuration < 0 || o.VerifyDuration > 0 && o.VerifyDuration < 10*time.Millisecond {
		return fmt.Errorf("verify duration %v: want at least 10ms, or 0 for none", o.VerifyDuration)
	}
	if o.Profile && !slices.Contains([]string{"pps", "frame-sizes", "rfc2544", "multiflow"}, scenario) {
		return fmt.Errorf("--profile: frame scenarios only (pps, frame-sizes, rfc2544, multiflow), not %s", scenario)
	}
	for _, t := range o.RedisTests {
		if !slices.Contains(apps.RedisTests, t) {
			return fmt.Errorf("redis test %q: want some of %s", t, strings.Join(apps.RedisTests, ","))
		}
	}
	if conn {
		if err := validateConn(o, scenario); err != nil {
			return err
		}
	}
	for _, s := range o.Sizes {
		if s != traffic.IMIX && (s < traffic.MinFrameSize || s > traffic.MaxJumboSize) {
			return fmt.Errorf("frame size %d: want %d to %d", s, traffic.MinFrameSize, traffic.MaxJumboSize)
		}
	}
	for _, f := range o.Flows {
		if scenario == "datapath" && (f < 1 || f > 50_000_000) {
			return fmt.Errorf("datapath: table size %d: want 1 to 50000000 connections", f)
		}
		if scenario != "datapath" && (f < 1 || f > traffic.MaxFlows) {
			return fmt.Errorf("flows %d: want 1 to %d", f, traffic.MaxFlows)
		}
		if f > bench.MaxAddressFlows && variesAddresses(scenario, o.Variations) {
			return fmt.Errorf("flows %d: flows that vary addresses (%s l3) come from the lab's routed blocks, %d addresses", f, scenario, bench.MaxAddressFlows)
		}
	}
	if o.Repeat < 0 {
		return fmt.Errorf("repeat %d: want a positive count", o.Repeat)
	}
	for _, v := range o.Variations {
		if _, err := traffic.ParseVary(v); err != nil {
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
func Run(ctx context.Context, scenario string, opts bench.Options) (*Results, error) {
	opts = withDefaults(opts, scenario)
	if err := validate(opts, scenario); err != nil {
		return nil, &OptionError{err}
	}
	conn := slices.Contains(connScenarios, scenario)
	var notes []string
	if scenario == "cc" {
		avail, err := datapath.MemAvailable()
		if err != nil {
			return nil, err
		}
		asked := opts.Conns
		if opts.Conns, notes = fitConns(opts, avail); len(opts.Conns) == 0 {
			return nil, &OptionError{fmt.Errorf("cc: none of %v connections fits in this machine's memory: %s", asked, strings.Join(notes, "; "))}
		}
		for _, n := range notes {
			if opts.Progress != nil && !opts.JSONProgress {
				fmt.Fprintf(opts.Progress, "[cc] %s\n", n)
			}
		}
	}
	if !conn && scenario != "datapath" && scenario != "apply" {
		avail, err := datapath.MemAvailable()
		if err != nil {
			return nil, err
		}
		if err := checkFrameMemory(scenario, opts, avail); err != nil {
			return nil, &OptionError{err}
		}
	}
	build, err := checkBuild(opts)
	if err != nil {
		return nil, err
	}
	res := newResults(scenario, opts, build)
	res.Notes = notes
	switch scenario {
	case "datapath":
		return res, runDatapath(res, opts)
	case "apply":
		return res, runApply(ctx, res, opts)
	case "cluster":
		return res, runCluster(ctx, res, opts)
	}
	env, err := bench.NewEnv(topo.Topology{Name: opts.LabName, Net: opts.LabNet, Reals: opts.Reals}, opts.Self)
	if err != nil {
		return nil, err
	}
	if big := slices.Max(opts.Sizes); big > traffic.MaxFrameSize {
		if err := env.SetMTU(big - 14 - traffic.FCS); err != nil {
			env.Close()
			return nil, err
		}
	}
	defer env.Close()
	var fr *frames.Runner
	var cr *conns.Runner
	if conn {
		cr = conns.NewRunner(env, opts, scenario, &res.ConnResults)
	} else {
		fr = frames.NewRunner(env, opts, scenario, &res.FrameResults)
	}
	for _, name := range opts.DUTs {
		dut, _ := NewDUT(name, scenario, opts)
		if err := dut.Setup(ctx, env); err != nil {
			return res, fmt.Errorf("set up %s: %w", name, err)
		}
		res.DUTs[name] = dut.Version(env)
		var err error
		if conn {
			err = cr.RunDUT(ctx, dut)
		} else if err = fr.Settle(ctx, dut); err == nil {
			err = fr.RunDUT(ctx, dut)
		}
		if terr := dut.Teardown(env); err == nil && terr != nil {
			err = fmt.Errorf("tear down %s: %w", name, terr)
		}
		if err != nil {
			return res, err
		}
	}
	if scenario == "synflood" {
		// the generator's own ceiling, after the DUTs: a DUT attached
		// to the balancer's interface after the sink left it got the
		// generator's frames only in part (veth, kernel 6.18)
		if err := cr.FloodCeiling(ctx); err != nil {
			return res, err
		}
	}
	res.Finished = time.Now()
	return res, nil
}

// runDatapath measures the data path's per-packet cost through
// BPF_PROG_RUN for each connection-table size of --flows (the table of
// issue 2; no lab, no DUTs).
func runDatapath(res *Results, o bench.Options) error {
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

// runApply measures how fast the daemon takes configurations of many
// services, against nft loading the same services (cfgscale).
func runApply(ctx context.Context, res *Results, o bench.Options) error {
	progress := func(line string) {
		if o.Progress != nil && !o.JSONProgress {
			fmt.Fprintf(o.Progress, "[apply] %s\n", line)
		}
	}
	lab := topo.Topology{Name: o.LabName, Net: o.LabNet, Reals: 3}
	table, err := cfgscale.Measure(ctx, cfgscale.Options{Services: o.Services, Self: o.Self, Lab: lab}, progress)
	res.Apply = table
	if err != nil {
		return err
	}
	res.DUTs["xlb"] = "xlb " + res.Revision + ": the daemon, through its API"
	res.DUTs["nft"] = table.NftVersion + ": the same services as DNAT rules"
	res.Finished = time.Now()
	return nil
}

// runCluster measures clusters of xlb nodes behind an ECMP router, per
// node count (clusterbench).
func runCluster(ctx context.Context, res *Results, o bench.Options) error {
	progress := func(line string) {
		if o.Progress != nil && !o.JSONProgress {
			fmt.Fprintf(o.Progress, "[cluster] %s\n", line)
		}
	}
	table, err := clusterbench.Measure(ctx, clusterbench.Options{Nodes: o.Nodes, Streams: o.Streams, Duration: o.Duration,
		Reals: o.Reals, Self: o.Self, LabName: o.LabName, LabNet: o.LabNet}, progress)
	res.Cluster = table
	if err != nil {
		return err
	}
	res.DUTs["xlb"] = "xlb " + res.Revision + ": a daemon on every node, BGP to the router, connection sync between nodes"
	res.DUTs["router"] = table.FRR + " in the router namespace, ECMP over the nodes"
	res.Finished = time.Now()
	return nil
}

// unclean says why a build names no commit exactly.
// checkBuild asks the xlb binary of o where it comes from, and refuses
// one that names no commit exactly unless o allows it.
func checkBuild(o bench.Options) (bench.Build, error) {
	build, err := bench.XLBBuild(o.Self)
	if err != nil {
		return build, err
	}
	if !build.Clean() && !o.AllowUnclean {
		return build, &OptionError{fmt.Errorf("the xlb binary %s is %s: its figures would name no commit; "+
			"build it from a clean checkout (make build), or pass --allow-unclean and every report says so", o.Self, unclean(build))}
	}
	return build, nil
}

func unclean(b bench.Build) string {
	if b.Revision == "" {
		return "a build outside a git checkout (no revision)"
	}
	return "built at " + b.Revision + " with changes not committed"
}

// variesAddresses says whether a scenario's flows vary IP addresses:
// pps's (client addresses) and multiflow's l3 variations.
func variesAddresses(scenario string, variations []string) bool {
	if scenario == "pps" {
		return true
	}
	return scenario == "multiflow" && slices.ContainsFunc(variations, func(v string) bool { return strings.HasPrefix(v, "l3-") })
}
