// SPDX-License-Identifier: Apache-2.0

package sched

import "fmt"

// SmoothWRR returns one full cycle of nginx-style smooth weighted round
// robin. With g the greatest common divisor of the weights > 0, the cycle
// is sum(weight)/g long and each backend appears weight/g times, the heavy
// ones interleaved with the light ones instead of bunched: weights 5,1,1
// for a,b,c give a a b a c a a. Drained backends are left out; ties go to
// the backend listed first, so the cycle depends on the input order.
//
// The data path steps a cursor through the cycle, which repeats the
// infinite nginx sequence exactly: after one full cycle every running
// counter is back at zero. Reducing by g keeps the table short (weights
// 100,100 give a b, not 200 entries). It fails with [ErrTableSize] when
// the reduced cycle would be longer than [MaxTableSize].
//
// Building costs O(cycle length x backends), fine for a control plane.
func SmoothWRR(backends []Backend) ([]uint32, error) {
	live, err := validate(backends)
	if err != nil {
		return nil, err
	}
	ws := make([]uint32, len(live))
	for i, b := range live {
		ws[i] = b.Weight
	}
	g, cycle := reduce(ws)
	// int64 holds any sum of uint32 weights and the signed running
	// counters, which stay within (-total, total).
	weights := make([]int64, len(live))
	total := int64(cycle)
	for i, w := range ws {
		weights[i] = int64(w / g)
	}
	if total > MaxTableSize {
		return nil, fmt.Errorf("%w: weighted round robin cycle of %d entries (weights reduced by their gcd %d) exceeds %d",
			ErrTableSize, total, g, MaxTableSize)
	}

	current := make([]int64, len(live))
	out := make([]uint32, total)
	for n := range out {
		// Every backend earns its weight; the richest is picked and
		// pays back the total, which is what spreads the heavy ones out.
		best := 0
		for i, w := range weights {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out[n] = live[best].ID
	}
	return out, nil
}

// CycleLength is the length of the table SmoothWRR builds for these
// weights: their sum divided by their greatest common divisor, weights of
// 0 left out (0 when none is above 0). Above [MaxTableSize] SmoothWRR
// fails, so a configuration can be checked against it beforehand.
func CycleLength(weights []uint32) uint64 {
	_, n := reduce(weights)
	return n
}

// reduce returns the greatest common divisor g of the weights above 0
// and the sum of those weights divided by g.
func reduce(weights []uint32) (g uint32, total uint64) {
	for _, w := range weights {
		g = gcd(g, w)
	}
	if g == 0 {
		return 0, 0
	}
	for _, w := range weights {
		total += uint64(w / g)
	}
	return g, total
}

// gcd is Euclid's greatest common divisor; gcd(a, 0) = a.
func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
