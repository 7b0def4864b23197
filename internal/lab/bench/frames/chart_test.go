// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// TestChartsOneFlowCount draws the pps chart of a run with a single flow
// count: its log x axis then has one value, which gonum alone widens to
// 0 and cannot draw (a panic before this was handled).
func TestChartsOneFlowCount(t *testing.T) {
	for _, flows := range []int{1, 1000} {
		r := &Report{Scenario: "pps", Options: bench.Options{DUTs: []string{"xdp-fwd", "sink"}, Flows: []int{flows}}}
		for _, d := range r.Options.DUTs {
			r.Trials = append(r.Trials, Trial{Scenario: "pps", Role: "max", DUT: d, Size: 64, Flows: flows, RxPPS: 2e6, Valid: true})
		}
		dir := t.TempDir()
		charts, err := r.Charts(dir)
		if err != nil || len(charts) != 1 {
			t.Fatalf("flows %d: charts %v, %v", flows, charts, err)
		}
		for _, ext := range []string{".svg", ".png"} {
			if st, err := os.Stat(filepath.Join(dir, "pps-vs-flows"+ext)); err != nil || st.Size() < 1000 {
				t.Errorf("flows %d: pps-vs-flows%s: %v", flows, ext, err)
			}
		}
	}
}
