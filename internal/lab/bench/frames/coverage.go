// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// A trial offers every flow at least once: the generator sends its flows
// in turn, so a trial of fewer frames than flows leaves some out, and a
// search could find a rate only by not reaching them (seen: 63 of 1M
// flows that xlb's table refused were never sent at the rate the search
// settled on). VSPERF's trials of 60 s offer every flow at any rate it
// searches. A trial is stretched to cover its flows, up to maxStretch
// times its duration; a paced trial that would need more is invalid
// (a search counts it as failed).
const (
	maxStretch   = 10
	coverReserve = 1.05 // a little more than one frame a flow
)

// coverDuration is how long rate takes to offer every one of flows.
func coverDuration(flows int, rate float64) time.Duration {
	return time.Duration(coverReserve * float64(flows) / rate * float64(time.Second))
}

// stretch returns the spec with its duration long enough to offer every
// flow at its rate, or why it cannot be: a paced trial only (the rate of
// an unpaced one is known after it, runCovering).
func stretch(s TrialSpec) (TrialSpec, string) {
	if s.Rate <= 0 || s.Flows <= 1 {
		return s, ""
	}
	need := coverDuration(s.Flows, s.Rate)
	switch {
	case need <= s.Duration:
	case need > maxStretch*s.Duration:
		return s, fmt.Sprintf("at %.0f pps every one of %d flows takes %v, over %d times the trial's %v", s.Rate, s.Flows,
			need.Round(time.Millisecond), maxStretch, s.Duration)
	default:
		s.Duration = need
	}
	return s, ""
}

// runCovering runs a trial that offers every flow at least once: a
// paced trial stretched beforehand, an unpaced one run again, longer,
// when it sent fewer frames than there are flows (the shorter run is
// not recorded).
func (r *Runner) runCovering(ctx context.Context, dut bench.DUT, s TrialSpec) (Trial, error) {
	s, why := stretch(s)
	if why != "" {
		t := newTrial(dut, s)
		t.Invalid = why
		return t, nil
	}
	t, err := RunTrial(ctx, r.env, dut, s)
	if err != nil || s.Rate > 0 || !t.Valid || t.Sent >= uint64(s.Flows) {
		return t, err
	}
	s.Warmup = false // warmed up by the first run
	s.Duration = min(coverDuration(s.Flows, float64(max(t.Sent, 1))/s.Duration.Seconds()), maxStretch*s.Duration)
	return RunTrial(ctx, r.env, dut, s)
}
