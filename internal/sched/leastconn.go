// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"math"
	"sort"
)

// LCReal is one real as least-connection scheduling sees it.
type LCReal struct {
	Weight   uint32 // configured weight; 0 takes no new connections
	Active   int    // established connections
	Inactive int    // other live connections
}

// LCTableTotal is the sum of the weights LeastConnWeights returns (when
// any real can take connections): fine enough to split a period's
// arrivals, small enough for a short smooth-wrr table.
const LCTableTotal = 1000

// LeastConnWeights turns live connection counts into the weights a wrr
// table schedules the next period's connections with, so that the
// period ends as IPVS's lc (weighted: false) or wlc (weighted: true)
// would have left it. IPVS gives each new connection to the real with
// the least overhead/weight, overhead = 256 x active + inactive; the
// arrivals of a period (expected: about expectedNew) therefore "fill"
// the least loaded reals up to a common level h, real i receiving
// max(0, h x w_i - load_i). The weights returned are those shares,
// scaled to LCTableTotal. lc treats every real with a weight above 0 as
// weight 1.
func LeastConnWeights(reals []LCReal, weighted bool, expectedNew float64) []uint32 {
	out := make([]uint32, len(reals))
	type cand struct {
		i       int
		w, load float64
	}
	var cs []cand
	for i, r := range reals {
		if r.Weight == 0 {
			continue
		}
		w := 1.0
		if weighted {
			w = float64(r.Weight)
		}
		cs = append(cs, cand{i, w, float64(r.Active) + float64(r.Inactive)/256})
	}
	if len(cs) == 0 {
		return out
	}
	// at least one arrival, so that the table is never empty
	n := math.Max(expectedNew, 1)
	// water filling: raise h over the reals in order of load/w
	sort.Slice(cs, func(a, b int) bool { return cs[a].load/cs[a].w < cs[b].load/cs[b].w })
	var sumW, sumLoad, h float64
	for k, c := range cs {
		sumW += c.w
		sumLoad += c.load
		h = (n + sumLoad) / sumW
		if k+1 == len(cs) || h <= cs[k+1].load/cs[k+1].w {
			break
		}
	}
	shares := make([]float64, len(cs))
	var total float64
	for k, c := range cs {
		shares[k] = math.Max(0, h*c.w-c.load)
		total += shares[k]
	}
	for k, c := range cs {
		out[c.i] = uint32(math.Round(shares[k] / total * LCTableTotal))
	}
	// rounding may have zeroed every share of a tiny period: keep the
	// least loaded real schedulable
	if sum(out) == 0 {
		out[cs[0].i] = 1
	}
	return out
}

func sum(ws []uint32) (s uint32) {
	for _, w := range ws {
		s += w
	}
	return s
}
