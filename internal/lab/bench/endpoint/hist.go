// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"math"
	"math/bits"
	"time"
)

// The histogram layout of bpf/bench/ep.h: exact nanoseconds below 64,
// then histSub buckets per power of two (1.6% wide).
const (
	histSub     = 64
	histBuckets = histSub + 32*histSub
)

// bucketOf is ep_hist_bucket of ep.h, the bucket of ns nanoseconds.
func bucketOf(ns uint64) int {
	if ns < histSub {
		return int(ns)
	}
	e := 63 - bits.LeadingZeros64(ns) - 6 // ns >> e is in [64, 128)
	b := histSub + e*histSub + int(ns>>e) - histSub
	return min(b, histBuckets-1)
}

// bucketBounds is the range [lo, hi) of nanoseconds bucket b counts.
func bucketBounds(b int) (lo, hi uint64) {
	if b < histSub {
		return uint64(b), uint64(b) + 1
	}
	e := (b - histSub) / histSub
	m := uint64((b-histSub)%histSub + histSub)
	return m << e, (m + 1) << e
}

// Histogram counts durations (handshakes, request/response times) in
// the endpoint's buckets.
type Histogram struct {
	Counts []uint64 `json:"counts"` // per bucket
}

// Total is the number of durations counted.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// mid is the duration a bucket stands for: its middle.
func mid(b int) time.Duration {
	lo, hi := bucketBounds(b)
	return time.Duration(lo + (hi-lo)/2)
}

// Quantile returns the duration below which a fraction q of the counts
// lie (the middle of its bucket), 0 for an empty histogram.
func (h Histogram) Quantile(q float64) time.Duration {
	total := h.Total()
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for b, c := range h.Counts {
		if seen += c; seen >= rank {
			return mid(b)
		}
	}
	return mid(len(h.Counts) - 1)
}

// Mean is the mean duration (from the buckets' middles).
func (h Histogram) Mean() time.Duration {
	var sum float64
	for b, c := range h.Counts {
		sum += float64(c) * float64(mid(b))
	}
	if total := h.Total(); total > 0 {
		return time.Duration(sum / float64(total))
	}
	return 0
}

// Max is the upper bound of the highest bucket counted.
func (h Histogram) Max() time.Duration {
	for b := len(h.Counts) - 1; b >= 0; b-- {
		if h.Counts[b] > 0 {
			_, hi := bucketBounds(b)
			return time.Duration(hi)
		}
	}
	return 0
}

// Add adds the counts of o to h.
func (h *Histogram) Add(o Histogram) {
	if len(h.Counts) < len(o.Counts) {
		h.Counts = append(h.Counts, make([]uint64, len(o.Counts)-len(h.Counts))...)
	}
	for b, c := range o.Counts {
		h.Counts[b] += c
	}
}

// Sub returns h minus an earlier reading of the same histogram.
func (h Histogram) Sub(earlier Histogram) Histogram {
	out := Histogram{Counts: append([]uint64(nil), h.Counts...)}
	for b := range min(len(out.Counts), len(earlier.Counts)) {
		out.Counts[b] -= earlier.Counts[b]
	}
	return out
}
