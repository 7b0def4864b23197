// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
)

func TestPerCoreRate(t *testing.T) {
	for _, tc := range []struct{ answered, ceiling, want float64 }{
		{500_000, 1_000_000, 1_000_000}, // half the core each
		{750_000, 1_000_000, 3_000_000},
		{1_000_000, 1_000_000, 0}, // at the ceiling: too small to tell
		{0, 1_000_000, 0},
		{500_000, 0, 0},
	} {
		if got := perCoreRate(tc.answered, tc.ceiling); math.Abs(got-tc.want) > 1 {
			t.Errorf("perCoreRate(%v, %v) = %v, want %v", tc.answered, tc.ceiling, got, tc.want)
		}
	}
}

// TestSynFloodReport: the flood SYNs that reached a real leave out the
// legitimate connections' own SYN (a proxy's valid cookies, else the
// client's opens), and the goals are computed from the phases.
func TestSynFloodReport(t *testing.T) {
	legit := func(attempted uint64, cps float64) *ConnTrial {
		return &ConnTrial{CPS: cps, Client: endpoint.ClientStats{Attempted: attempted}}
	}
	r := &Report{Scenario: "synflood", Options: bench.Options{DUTs: []string{"xlb", "xlb-synproxy", "nft-synproxy"},
		CPUs: []int{0}, OpenRate: 20_000}}
	r.SynFlood = []SynFloodTrial{
		{DUT: "xlb", Phase: PhaseFlood, FloodPPS: 400_000, SYNsToReals: 400_000, Duration: 1},
		{DUT: "xlb", Phase: PhaseLegit, SYNsToReals: 20_000, Legit: legit(20_000, 20_000)},
		{DUT: "xlb-synproxy", Phase: PhaseFlood, FloodPPS: 700_000, AnsweredPPS: 700_000,
			Proxy: &bench.SynproxyCounts{SYNs: 700_000}, Duration: 1},
		{DUT: "xlb-synproxy", Phase: PhaseLegit, SYNsToReals: 20_000, Proxy: &bench.SynproxyCounts{Valid: 20_000},
			Legit: legit(20_000, 20_000)},
		{DUT: "xlb-synproxy", Phase: PhaseLegitHalf, SYNsToReals: 20_003, Proxy: &bench.SynproxyCounts{Valid: 20_000},
			Legit: legit(20_000, 19_000)},
		{DUT: "nft-synproxy", Phase: PhaseFlood, FloodPPS: 350_000, AnsweredPPS: 350_000,
			Proxy: &bench.SynproxyCounts{SYNs: 350_000}, Duration: 1},
		{DUT: "sink", Phase: PhaseCeiling, FloodPPS: 10_000_000},
		{DUT: "sink", Phase: PhaseReflect, FloodPPS: 1_000_000},
	}
	if n := floodSYNsToReals(r.SynFlood[1]); n != 0 {
		t.Errorf("xlb legit: %d flood SYNs to reals, want 0", n)
	}
	var b bytes.Buffer
	r.writeSynFlood(&b)
	for _, want := range []string{
		"| xlb-synproxy | 700000 | 700000 | 2333333 | 0 | 0 -> 0 |",
		"Spoofed SYNs that reached a real through xlb-synproxy (goal 0): 3.",
		"(goal at least 0.90x without it): 0.95x",
		"(goal at least 5x): 2333333 / 538462 = 4.33x",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
