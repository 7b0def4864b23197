// SPDX-License-Identifier: Apache-2.0

package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// quickOptions are each scenario's options of a quick pass (`xlb bench
// all --quick`, the CI smoke test): every DUT and table, tiny trials
// and tables far below 1M entries. Trials are 50 ms unless set.
var quickOptions = map[string]bench.Options{
	"pps": {Flows: []int{1, 1000}, Profile: true,
		DUTs: []string{"xlb", "xdp-fwd", "xdp-fixed", "kernel", "nft", "xlb-w1", "nft-w1"}},
	"frame-sizes": {Sizes: []int{64, 1518, traffic.IMIX}, FixedRate: 50_000},
	"rfc2544":     {Sizes: []int{64, 512}, MaxIterations: 2, BestOf: 2, VerifyDuration: 50 * time.Millisecond},
	"multiflow": {Variations: []string{"l3-src", "l3-dst", "l4-both"}, Flows: []int{1000, 70000}, Sizes: []int{64}, MaxIterations: 2,
		DUTs: []string{"xlb", "xdp-fwd", "nft"}},
	"apply":    {Services: []int{20, 40}},
	"datapath": {Flows: []int{1000, 5000}, Repeat: 10000},
	"cps":      {MaxIterations: 2},
	// a keepalive above the longest settle (a refused SYN's retries:
	// about 1.2 s), which would otherwise send the round's requests,
	// and a table with room: a table refuses a few connections before
	// its size (docs/operator-guide.md), which cc measures and a quick
	// pass does not
	"cc":      {Conns: []int{2000}, OpenRate: 20_000, Keepalive: 3 * time.Second, ConnTable: 8000},
	"cluster": {Nodes: []int{2}, Streams: 4, Duration: time.Second},
	"redis":   {RedisTests: []string{"set", "get"}},
	// the scenarios of whole seconds a test (iperf3, sockperf): fewer
	// DUTs, so that the pass stays under 5 minutes
	"throughput": {DUTs: []string{"xlb", "xdp-fwd", "direct"}},
	"latency":    {DUTs: []string{"xlb", "xdp-fwd", "direct"}},
	"synflood":   {},
}

// QuickOptions are the options of scenario's quick pass on top of base
// (which gives the lab's name, the binary and the like).
func QuickOptions(scenario string, base bench.Options) bench.Options {
	q := quickOptions[scenario]
	q.Self, q.AllowUnclean, q.LabName, q.LabNet = base.Self, base.AllowUnclean, base.LabName, base.LabNet
	q.Progress, q.JSONProgress = base.Progress, base.JSONProgress
	if q.Duration == 0 {
		q.Duration = 50 * time.Millisecond
	}
	return q
}

// IndexEntry is one scenario of `xlb bench all`.
type IndexEntry struct {
	Scenario string        `json:"scenario"`
	Dir      string        `json:"dir"` // relative to the index
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Error    string        `json:"error,omitempty"`
	// Results are what the scenario measured (in Dir/results.json)
	Results *Results `json:"-"`
}

// Index is `xlb bench all`: every scenario in turn, each in a directory
// of its own, and index.md linking their reports.
type Index struct {
	Command  string        `json:"command"`
	Quick    bool          `json:"quick"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Machine  bench.Machine `json:"machine"`
	Build    bench.Build   `json:"xlb_build"`
	Entries  []IndexEntry  `json:"scenarios"`
}

// RunAll runs every scenario (Scenarios, in order) into out/SCENARIO:
// each with its defaults, or with quick its quick pass. A scenario that
// fails is recorded and the others still run; the error joins theirs.
// index.md and index.json are written after each scenario, so that an
// interrupted run still has its index.
func RunAll(ctx context.Context, out string, quick bool, base bench.Options, command string) (*Index, error) {
	build, err := checkBuild(base)
	if err != nil {
		return nil, err
	}
	idx := &Index{Command: command, Quick: quick, Started: time.Now(), Machine: bench.ThisMachine(), Build: build}
	for _, sc := range Scenarios {
		o := base
		if quick {
			o = QuickOptions(sc, base)
		}
		if err := validate(withDefaults(o, sc), sc); err != nil {
			return nil, &OptionError{fmt.Errorf("%s: %w", sc, err)}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	var errs []error
	for _, sc := range Scenarios {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		o := base
		if quick {
			o = QuickOptions(sc, base)
		}
		e := IndexEntry{Scenario: sc, Dir: sc, Started: time.Now()}
		if o.Progress != nil && !o.JSONProgress {
			fmt.Fprintf(o.Progress, "[all] %s\n", sc)
		}
		res, err := Run(ctx, sc, o)
		if err == nil {
			res.Command = fmt.Sprintf("%s (scenario %s)", command, sc)
			err = res.Write(filepath.Join(out, sc))
		}
		if err == nil {
			err = res.Check()
		}
		e.Duration, e.Results = time.Since(e.Started), res
		if err != nil {
			e.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", sc, err))
		}
		idx.Entries = append(idx.Entries, e)
		idx.Finished = time.Now()
		if werr := idx.write(out); werr != nil {
			return idx, errors.Join(append(errs, werr)...)
		}
	}
	return idx, errors.Join(errs...)
}

// write stores index.json and index.md in dir.
func (x *Index) write(dir string) error {
	b, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(x.Markdown()), 0o644)
}

// Markdown is index.md: the run, then a row per scenario linking its
// report.
func (x *Index) Markdown() string {
	var b strings.Builder
	if !x.Build.Clean() {
		fmt.Fprintf(&b, "%s: %s.\n\n", uncleanWarning, unclean(x.Build))
	}
	kind := "every scenario with its defaults"
	if x.Quick {
		kind = "a quick pass (tiny trials: it checks that every table is produced, its figures are no measure)"
	}
	fmt.Fprintf(&b, "# xlb bench all\n\n`%s`: %s.\n\n", x.Command, kind)
	fmt.Fprintf(&b, "%s; xlb %s; %s to %s (%s).\n\n", x.Machine.Summary(), x.Build.Version,
		x.Started.UTC().Format(time.DateTime), x.Finished.UTC().Format(time.DateTime), x.Finished.Sub(x.Started).Round(time.Second))
	b.WriteString("| scenario | report | took | outcome |\n|---|---|---:|---|\n")
	for _, e := range x.Entries {
		outcome := "ok"
		if e.Error != "" {
			outcome = "**failed**: " + strings.ReplaceAll(e.Error, "|", "\\|")
		}
		fmt.Fprintf(&b, "| %s | [%s/report.md](%s/report.md) | %s | %s |\n", e.Scenario, e.Dir, e.Dir, e.Duration.Round(time.Second), outcome)
	}
	return b.String()
}
