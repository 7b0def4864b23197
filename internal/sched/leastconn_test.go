// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"slices"
	"testing"
)

func TestLeastConnWeights(t *testing.T) {
	for _, tc := range []struct {
		name     string
		have     []LCReal
		weighted bool
		expected float64
		want     []uint32
	}{
		{"equal loads share equally", []LCReal{{1, 10, 0}, {1, 10, 0}}, false, 100, []uint32{500, 500}},
		{"the emptier real takes the period's arrivals first",
			[]LCReal{{1, 0, 0}, {1, 50, 0}}, false, 50, []uint32{1000, 0}},
		{"beyond the gap, the rest is shared",
			[]LCReal{{1, 0, 0}, {1, 50, 0}}, false, 150, []uint32{667, 333}},
		{"wlc: twice the weight, twice the connections at the same level",
			[]LCReal{{2, 0, 0}, {1, 0, 0}}, true, 300, []uint32{667, 333}},
		{"lc ignores weights above 0", []LCReal{{5, 0, 0}, {1, 0, 0}}, false, 100, []uint32{500, 500}},
		{"weight 0 takes none", []LCReal{{0, 0, 0}, {1, 100, 0}}, true, 10, []uint32{0, 1000}},
		{"inactive connections weigh 1/256", []LCReal{{1, 0, 512}, {1, 1, 0}}, false, 1, []uint32{0, 1000}},
		{"no arrivals expected: still one real schedulable", []LCReal{{1, 3, 0}, {1, 1, 0}}, false, 0, []uint32{0, 1000}},
		{"no real can take any", []LCReal{{0, 0, 0}}, true, 10, []uint32{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeastConnWeights(tc.have, tc.weighted, tc.expected); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLeastConnMatchesIPVS: over one period, distributing the expected
// arrivals by the weights ends within one connection of what IPVS's wlc
// (one arrival at a time to the least overhead/weight) ends with.
func TestLeastConnMatchesIPVS(t *testing.T) {
	have := []LCReal{{3, 40, 0}, {1, 2, 0}, {2, 30, 0}, {1, 0, 0}}
	const arrivals = 120
	ipvs := slices.Clone(have)
	for range arrivals {
		best := 0
		for i, r := range ipvs {
			if r.Active*int(ipvs[best].Weight) < ipvs[best].Active*int(r.Weight) {
				best = i
			}
		}
		ipvs[best].Active++
	}
	w := LeastConnWeights(have, true, arrivals)
	for i, r := range have {
		got := float64(r.Active) + float64(w[i])/LCTableTotal*arrivals
		if d := got - float64(ipvs[i].Active); d > 1 || d < -1 {
			t.Errorf("real %d ends with %.1f connections, IPVS wlc %d", i, got, ipvs[i].Active)
		}
	}
}
