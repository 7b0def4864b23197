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
	g := live[0].Weight
	for _, b := range live[1:] {
		g = gcd(g, b.Weight)
	}
	// int64 holds any sum of uint32 weights and the signed running
	// counters, which stay within (-total, total).
	weights := make([]int64, len(live))
	var total int64
	for i, b := range live {
		weights[i] = int64(b.Weight / g)
		total += weights[i]
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

// gcd is Euclid's greatest common divisor; gcd(a, 0) = a.
func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
