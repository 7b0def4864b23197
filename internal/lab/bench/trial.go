// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"fmt"
	"io"
)

// PaceTolerance is how far a paced trial's offered rate may be from the
// asked rate before the trial is invalid (the generator fell behind).
const PaceTolerance = 0.02

// DropsSince is what a DUT dropped between two readings of its drop
// counters, by reason (nil when nothing).
func DropsSince(before, after map[string]uint64) map[string]uint64 {
	var out map[string]uint64
	for reason, n := range after {
		if n > before[reason] {
			if out == nil {
				out = map[string]uint64{}
			}
			out[reason] = n - before[reason]
		}
	}
	return out
}

// WriteJSONLine writes v to w as one line of JSON (progress in --json
// mode); a value that does not marshal writes nothing.
func WriteJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		fmt.Fprintf(w, "%s\n", b)
	}
}
