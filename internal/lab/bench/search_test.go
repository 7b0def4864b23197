// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"math"
	"testing"
)

// fakeResult is a valid trial as a search reads it.
type fakeResult struct{ txPPS, lossPct float64 }

func (fakeResult) SearchValid() bool        { return true }
func (f fakeResult) SearchLossPct() float64 { return f.lossPct }
func (f fakeResult) SearchOffered() float64 { return f.txPPS }

// fakeDUT loses what exceeds capacity; the generator reaches at most top.
func fakeTrial(capacity, top float64, rates *[]float64) func(float64) (fakeResult, error) {
	return func(rate float64) (fakeResult, error) {
		*rates = append(*rates, rate)
		if rate == 0 || rate > top {
			rate = top
		}
		sent := rate
		recv := math.Min(sent, capacity)
		return fakeResult{txPPS: sent, lossPct: 100 * (sent - recv) / sent}, nil
	}
}

func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		capacity, top        float64
		p                    SearchParams
		wantLo, wantHi       float64
		wantMaxIter, minIter int
	}{
		{"no loss at max", 2e6, 1e6, SearchParams{LossTolerancePct: 0, Precision: 0.005, MaxIterations: 20}, 1e6, 1e6, 0, 0},
		{"NDR below max", 7e5, 1e6, SearchParams{LossTolerancePct: 0, Precision: 0.005, MaxIterations: 20}, 7e5 - 5e3, 7e5, 20, 5},
		{"PDR tolerates 0.1%", 7e5, 1e6, SearchParams{LossTolerancePct: 0.1, Precision: 0.005, MaxIterations: 20}, 7e5 - 5e3, 7e5 * 1.001, 20, 5},
		{"iterations bound the search", 7e5, 1e6, SearchParams{LossTolerancePct: 0, Precision: 0.0001, MaxIterations: 3}, 5e5, 7e5, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rates []float64
			res, err := Search(context.Background(), tc.p, fakeTrial(tc.capacity, tc.top, &rates))
			if err != nil {
				t.Fatal(err)
			}
			if res.RatePPS < tc.wantLo || res.RatePPS > tc.wantHi {
				t.Errorf("rate %.0f, want %.0f..%.0f (trials at %v)", res.RatePPS, tc.wantLo, tc.wantHi, rates)
			}
			if res.Iterations > tc.wantMaxIter || res.Iterations < tc.minIter {
				t.Errorf("%d iterations, want %d..%d", res.Iterations, tc.minIter, tc.wantMaxIter)
			}
			if !res.Verified || rates[0] != 0 {
				t.Errorf("verified %v, first trial at %v: want a verified result after a trial at the maximum", res.Verified, rates[0])
			}
			if res.Iterations > 0 && rates[len(rates)-1] != res.RatePPS {
				t.Errorf("last trial at %.0f, want the verification at %.0f", rates[len(rates)-1], res.RatePPS)
			}
		})
	}
}

// TestSearchVerifiesTwice: with two verifications asked, a rate counts
// only when two trials in a row pass at it; a failure steps it down.
func TestSearchVerifiesTwice(t *testing.T) {
	var rates []float64
	pass := fakeTrial(7e5, 1e6, &rates)
	seen, failed := map[float64]int{}, false
	flaky := func(rate float64) (fakeResult, error) {
		r, err := pass(rate)
		// the first verification trial (a rate's second trial: the
		// search ran at it once) fails, as a noisy lab's may
		if seen[rate]++; seen[rate] == 2 && !failed {
			failed, r.lossPct = true, 1
		}
		return r, err
	}
	res, err := Search(context.Background(), SearchParams{Precision: 0.005, MaxIterations: 20, Verifications: 2}, flaky)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.VerifiedTimes != 2 || res.StepsDown != 1 {
		t.Fatalf("verified %v, %d times, %d steps down; want verified twice after one step down (trials at %v)",
			res.Verified, res.VerifiedTimes, res.StepsDown, rates)
	}
	n := len(rates)
	if rates[n-1] != res.RatePPS || rates[n-2] != res.RatePPS || res.RatePPS > 7e5*(1-VerifyStep) {
		t.Errorf("last trials at %v, want two at the stepped-down rate %.0f", rates[n-3:], res.RatePPS)
	}
	again := map[float64]int{}
	never := func(rate float64) (fakeResult, error) {
		r, err := pass(rate)
		if again[rate]++; again[rate] >= 2 {
			r.lossPct = 1 // no rate passes twice
		}
		return r, err
	}
	rates = nil
	res, err = Search(context.Background(), SearchParams{Precision: 0.005, MaxIterations: 20, Verifications: 2}, never)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified || res.StepsDown != MaxVerifySteps {
		t.Errorf("verified %v after %d steps down; want unverified after %d", res.Verified, res.StepsDown, MaxVerifySteps)
	}
}

// TestSearchMaximumVerifiedUnpaced: a maximum that passes is verified by
// more trials as fast as the generator goes, and the rate is the lowest
// they offered.
func TestSearchMaximumVerifiedUnpaced(t *testing.T) {
	var rates []float64
	tops := []float64{1e6, 9.8e5}
	trial := func(rate float64) (fakeResult, error) {
		rates = append(rates, rate)
		top := tops[min(len(rates)-1, len(tops)-1)]
		return fakeResult{txPPS: top}, nil
	}
	res, err := Search(context.Background(), SearchParams{Precision: 0.005, MaxIterations: 20, Verifications: 2}, trial)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.VerifiedTimes != 2 || res.RatePPS != 9.8e5 || len(rates) != 2 || rates[1] != 0 {
		t.Errorf("verified %v %d times at %.0f after trials at %v; want two unpaced trials and the lower rate, 980000",
			res.Verified, res.VerifiedTimes, res.RatePPS, rates)
	}
}
