// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
)

// SearchParams are the RFC 2544 binary search's, as TRex ndr and VSPERF
// take them.
type SearchParams struct {
	LossTolerancePct float64 // loss a passing trial may have: 0 for NDR, 0.1 for PDR
	Precision        float64 // stop when the interval is narrower than this fraction of the maximum (0.005)
	MaxIterations    int     // trials at most, besides the maximum and the verification
	// Verifications are the trials in a row the rate found must pass
	// (0 or 1: one, as RFC 2544; the DPVS-shaped cps asks two). When
	// one fails, the rate steps down by VerifyStep and is verified
	// again, at most MaxVerifySteps times.
	Verifications int
}

// VerifyStep is how far a rate whose verification failed steps down, as
// a fraction of itself; MaxVerifySteps how often.
const (
	VerifyStep     = 0.05
	MaxVerifySteps = 4
)

// SearchResult is a search's outcome.
type SearchResult struct {
	RatePPS  float64 `json:"rate_pps"` // highest passing rate found (0: none)
	Verified bool    `json:"verified"` // the final trials at that rate passed
	// VerifiedTimes is how many trials in a row passed at RatePPS;
	// StepsDown how often a failed verification lowered the rate.
	VerifiedTimes int     `json:"verified_times,omitempty"`
	StepsDown     int     `json:"steps_down,omitempty"`
	Iterations    int     `json:"iterations"`
	MaxPPS        float64 `json:"max_pps"` // the generator's unpaced rate through this DUT
	LossAtMaxPct  float64 `json:"loss_at_max_pct"`
}

// SearchTrial is what a search reads of a trial: frames (frames.Trial)
// or connections (conns.ConnTrial, whose errors are its loss).
type SearchTrial interface {
	SearchValid() bool      // the trial offered what it was asked
	SearchLossPct() float64 // what it lost
	SearchOffered() float64 // the rate it offered
}

// passes says whether a trial meets the tolerance. An invalid trial
// (the generator could not offer the rate) does not pass.
func passes[T SearchTrial](p SearchParams, t T) bool {
	return t.SearchValid() && t.SearchLossPct() <= p.LossTolerancePct
}

// Search finds the highest rate whose loss is within the tolerance:
// first a trial as fast as the generator goes, then halving the interval
// between the best passing and the lowest failing rate, then a final
// verification trial at the rate found. Every trial goes to record.
func Search[T SearchTrial](ctx context.Context, p SearchParams, trial func(rate float64) (T, error)) (SearchResult, error) {
	var res SearchResult
	top, err := trial(0)
	if err != nil {
		return res, err
	}
	res.MaxPPS, res.LossAtMaxPct = top.SearchOffered(), top.SearchLossPct()
	if !top.SearchValid() || top.SearchOffered() == 0 {
		return res, nil
	}
	need := max(p.Verifications, 1)
	if passes(p, top) {
		// The maximum is its own first verification, and the next
		// are as fast as the generator goes again: a paced trial
		// at the generator's own limit may not offer it (the
		// pacing costs the sender too). The rate is the lowest of
		// them; a failure searches below the maximum.
		res.RatePPS, res.VerifiedTimes = top.SearchOffered(), 1
		for res.VerifiedTimes < need && ctx.Err() == nil {
			t, err := trial(0)
			if err != nil {
				return res, err
			}
			if !passes(p, t) {
				break
			}
			res.RatePPS = min(res.RatePPS, t.SearchOffered())
			res.VerifiedTimes++
		}
		if res.Verified = res.VerifiedTimes == need; res.Verified {
			return res, nil
		}
		res.RatePPS, res.VerifiedTimes = 0, 0
	}
	lo, hi := 0.0, top.SearchOffered()
	for res.Iterations < p.MaxIterations && hi-lo > p.Precision*top.SearchOffered() && ctx.Err() == nil {
		mid := (lo + hi) / 2
		t, err := trial(mid)
		if err != nil {
			return res, err
		}
		res.Iterations++
		if passes(p, t) {
			lo = mid
		} else {
			hi = mid
		}
	}
	res.RatePPS = lo
	if lo == 0 {
		return res, ctx.Err()
	}
	return verify(ctx, p, res, trial)
}

// verify runs the verification trials at res.RatePPS (those it already
// passed are res.VerifiedTimes), stepping the rate down after a failure
// when more than one is asked.
func verify[T SearchTrial](ctx context.Context, p SearchParams, res SearchResult, trial func(rate float64) (T, error)) (SearchResult, error) {
	need := max(p.Verifications, 1)
	for ctx.Err() == nil {
		for res.VerifiedTimes < need && ctx.Err() == nil {
			t, err := trial(res.RatePPS)
			if err != nil {
				return res, err
			}
			if !passes(p, t) {
				break
			}
			res.VerifiedTimes++
		}
		res.Verified = res.VerifiedTimes == need
		if res.Verified || need == 1 || res.StepsDown == MaxVerifySteps {
			break // one verification reports what it saw, as RFC 2544
		}
		res.RatePPS *= 1 - VerifyStep
		res.StepsDown++
		res.VerifiedTimes = 0
	}
	return res, ctx.Err()
}
