// SPDX-License-Identifier: Apache-2.0

package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// TestFitConns: the cc sizes a machine's memory holds with 8 GiB to
// spare; the largest one that does not fit gives way to the largest that
// does, and the note says so.
func TestFitConns(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		duts  []string
		avail uint64
		want  []int
		note  string
	}{
		{"all fit", []string{"xlb", "nft"}, 24 * gib, []int{1_000_000, 10_000_000}, ""},
		{"xlb too big for 10M", []string{"xlb"}, 10 * gib, []int{1_000_000, 7_200_000},
			"10000000 connections need 2.7 GiB (the DUT's tables and the client's slots); this machine has 10.0 GiB available and a run keeps 8 GiB free: left out; 7200000, the largest that fits, runs instead"},
		{"nft takes more", []string{"xlb", "nft"}, 10 * gib, []int{1_000_000, 4_000_000}, "5.0 GiB"},
		{"nothing fits", []string{"xlb"}, 8 * gib, nil, "1000000 connections need"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := withDefaults(bench.Options{DUTs: tc.duts, Conns: []int{1_000_000, 10_000_000}}, "cc")
			kept, notes := fitConns(o, tc.avail)
			if !slices.Equal(kept, tc.want) {
				t.Errorf("kept %v, want %v (notes %q)", kept, tc.want, notes)
			}
			if got := strings.Join(notes, "\n"); !strings.Contains(got, tc.note) || (tc.note == "") != (got == "") {
				t.Errorf("notes %q, want one containing %q", got, tc.note)
			}
		})
	}
}
