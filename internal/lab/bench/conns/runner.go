// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"context"
	"fmt"
	"slices"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
)

// Runner runs one connection scenario's trials through each DUT and
// records them.
type Runner struct {
	env      *bench.Env
	opts     bench.Options
	res      *ConnResults
	scenario string
	done     int
}

// NewRunner returns the runner of a connection scenario in env,
// recording into res.
func NewRunner(env *bench.Env, opts bench.Options, scenario string, res *ConnResults) *Runner {
	return &Runner{env: env, opts: opts, res: res, scenario: scenario}
}

// RunDUT runs a connection scenario through one DUT: the XDP
// endpoints' part, then the real applications' part.
func (r *Runner) RunDUT(ctx context.Context, dut bench.DUT) error {
	if err := r.env.UseTCP(); err != nil {
		return err
	}
	if r.scenario == "synflood" {
		if err := r.synFlood(ctx, dut); err != nil {
			return fmt.Errorf("synflood through %s: %w", dut.Name(), err)
		}
		return nil
	}
	if slices.Contains([]string{"cps", "cc", "throughput", "latency"}, r.scenario) {
		if err := r.connScenarioFor(ctx, dut); err != nil {
			return fmt.Errorf("%s through %s: %w", r.scenario, dut.Name(), err)
		}
	}
	if !slices.Contains(apps.AppScenarios, r.scenario) {
		return nil
	}
	progress := func(line string) {
		if r.opts.Progress != nil && !r.opts.JSONProgress {
			fmt.Fprintf(r.opts.Progress, "[%s] %-7s %s\n", r.scenario, dut.Name(), line)
		}
	}
	res, err := apps.RunApp(ctx, r.env, r.scenario, dut, apps.AppOptions{Duration: r.opts.Duration, Progress: progress,
		Trials: r.opts.Repeat, RedisTests: r.opts.RedisTests, PayloadSizes: r.opts.PayloadSizes})
	r.res.Apps = append(r.res.Apps, res...)
	return err
}
