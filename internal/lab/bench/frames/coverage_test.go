// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"strings"
	"testing"
	"time"
)

// TestStretch: a paced trial lasts long enough to offer every flow once,
// up to ten times its duration; beyond, it is not run.
func TestStretch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flows int
		rate  float64
		want  time.Duration // 0: not run
	}{
		{"unpaced: known after it", 1_000_000, 0, 2 * time.Second},
		{"one flow", 1, 10, 2 * time.Second},
		{"covered", 1000, 1e6, 2 * time.Second},
		{"stretched", 1_000_000, 350_000, 3 * time.Second},
		{"at the limit", 1_000_000, 52_500, 20 * time.Second},
		{"beyond", 1_000_000, 40_000, 0},
	} {
		s, why := stretch(TrialSpec{Flows: tc.flows, Rate: tc.rate, Duration: 2 * time.Second})
		switch {
		case tc.want == 0 && (why == "" || !strings.Contains(why, "over 10 times the trial's 2s")):
			t.Errorf("%s: ran %v (%q), want refused", tc.name, s.Duration, why)
		case tc.want > 0 && (why != "" || s.Duration.Round(time.Millisecond) != tc.want):
			t.Errorf("%s: %v (%q), want %v", tc.name, s.Duration, why, tc.want)
		}
	}
}
