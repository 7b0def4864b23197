// SPDX-License-Identifier: Apache-2.0

package dram

import "testing"

func TestLinkIsOneCycle(t *testing.T) {
	const lines = 1000
	words := make([]uint64, lines*line/8)
	link(words, lines)
	seen := map[uint64]bool{}
	next := uint64(0)
	for range lines {
		if seen[next] {
			t.Fatalf("line %d read twice within %d reads", next, lines)
		}
		seen[next] = true
		next = words[next*line/8]
	}
	if next != 0 || len(seen) != lines {
		t.Fatalf("%d lines read, back at %d; want all %d and line 0", len(seen), next, lines)
	}
}

func TestChase(t *testing.T) {
	r, err := Chase(1000*line, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if r.RegionBytes != 1000*line || r.Reads != 1000 || r.ReadNs <= 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestChaseRefusesTooSmall(t *testing.T) {
	for _, tc := range []struct {
		size  uint64
		reads int
	}{{line, 10}, {100 * line, 0}} {
		if _, err := Chase(tc.size, tc.reads); err == nil {
			t.Errorf("Chase(%d, %d): no error", tc.size, tc.reads)
		}
	}
}
