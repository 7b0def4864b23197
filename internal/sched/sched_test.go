// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// equal returns n backends of weight 1 with ids 0..n-1.
func equal(n int) []Backend {
	out := make([]Backend, n)
	for i := range out {
		out[i] = Backend{ID: uint32(i), Key: fmt.Sprintf("10.0.%d.%d:80", i/250, i%250+1), Weight: 1}
	}
	return out
}

func shares(table []uint32) map[uint32]int {
	out := map[uint32]int{}
	for _, id := range table {
		out[id]++
	}
	return out
}

func TestIsPrime(t *testing.T) {
	for _, tc := range []struct {
		have uint32
		want bool
	}{
		{0, false}, {1, false}, {2, true}, {4, false}, {251, true},
		{65536, false}, {65537, true}, {655373, true}, {1 << 20, false},
	} {
		if got := IsPrime(tc.have); got != tc.want {
			t.Errorf("IsPrime(%d) = %v, want %v", tc.have, got, tc.want)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []Backend
		want []uint32
		err  error
	}{
		{"given order", []Backend{{ID: 7, Key: "b", Weight: 1}, {ID: 3, Key: "a", Weight: 9}}, []uint32{7, 3}, nil},
		{"drained skipped", []Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 2, Key: "b"}, {ID: 3, Key: "c", Weight: 2}}, []uint32{1, 3}, nil},
		{"all drained", []Backend{{ID: 1, Key: "a"}}, nil, ErrNoBackends},
		{"none", nil, nil, ErrNoBackends},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RoundRobin(tc.have)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestSmoothWRR(t *testing.T) {
	a, b, c := uint32(1), uint32(2), uint32(3)
	for _, tc := range []struct {
		name string
		have []uint32 // weights of a, b, c
		want []uint32
	}{
		{"5:1:1 interleaved", []uint32{5, 1, 1}, []uint32{a, a, b, a, c, a, a}},
		{"2:2 reduced by gcd", []uint32{2, 2}, []uint32{a, b}},
		{"3:0:1 drained skipped", []uint32{3, 0, 1}, []uint32{a, a, c, a}},
		{"equal", []uint32{1, 1, 1}, []uint32{a, b, c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []Backend
			for i, w := range tc.have {
				in = append(in, Backend{ID: uint32(i + 1), Key: fmt.Sprint(i), Weight: w})
			}
			got, err := SmoothWRR(in)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	var heavy []Backend
	for i := 0; i < 20; i++ {
		heavy = append(heavy, Backend{ID: uint32(i), Key: fmt.Sprint(i), Weight: 65535 - uint32(i%2)})
	}
	if _, err := SmoothWRR(heavy); err == nil {
		t.Error("a cycle longer than MaxTableSize was accepted")
	}
}

func TestMaglevEvenSpread(t *testing.T) {
	for _, n := range []int{3, 7, 10, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			table, err := Maglev(equal(n), DefaultMaglevSize)
			if err != nil {
				t.Fatal(err)
			}
			ideal := float64(DefaultMaglevSize) / float64(n)
			got := shares(table)
			if len(got) != n {
				t.Fatalf("%d of %d backends in the table", len(got), n)
			}
			for id, c := range got {
				if dev := float64(c)/ideal - 1; dev > 0.01 || dev < -0.01 {
					t.Errorf("backend %d has %d entries, %.2f%% off the ideal %.1f", id, c, 100*dev, ideal)
				}
			}
		})
	}
}

func TestMaglevWeighted(t *testing.T) {
	table, err := Maglev([]Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 2, Key: "b", Weight: 2}}, DefaultMaglevSize)
	if err != nil {
		t.Fatal(err)
	}
	got := shares(table)
	for id, want := range map[uint32]float64{1: 1.0 / 3, 2: 2.0 / 3} {
		share := float64(got[id]) / DefaultMaglevSize
		if share < want-0.01 || share > want+0.01 {
			t.Errorf("backend %d has share %.4f, want %.4f +- 0.01", id, share, want)
		}
	}
}

// changed counts the slots of a that b maps elsewhere, leaving out the
// slots a gave to skip.
func changed(a, b []uint32, skip uint32) (moved, kept int) {
	for i := range a {
		if a[i] == skip {
			continue
		}
		kept++
		if a[i] != b[i] {
			moved++
		}
	}
	return moved, kept
}

func TestMaglevMinimalDisruption(t *testing.T) {
	all := equal(10)
	before, err := Maglev(all, DefaultMaglevSize)
	if err != nil {
		t.Fatal(err)
	}
	for gone := range all {
		after, err := Maglev(slices.Delete(slices.Clone(all), gone, gone+1), DefaultMaglevSize)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(after, uint32(gone)) {
			t.Fatalf("removed backend %d still in the table", gone)
		}
		moved, kept := changed(before, after, uint32(gone))
		if moved*100 > kept {
			t.Errorf("removing backend %d moved %d of %d other slots (> 1%%)", gone, moved, kept)
		}
		// and putting it back restores the table exactly
		back, _ := Maglev(all, DefaultMaglevSize)
		if !slices.Equal(back, before) {
			t.Errorf("re-adding backend %d did not restore the table", gone)
		}
	}
}

func TestMaglevDeterministicAndOrderFree(t *testing.T) {
	all := equal(20)
	a, err := Maglev(all, 251)
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(all)
	slices.Reverse(rev)
	b, err := Maglev(rev, 251)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("the order of the backends changed the table")
	}
}

func TestMaglevErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []Backend
		size uint32
	}{
		{"size not prime", equal(3), 65536},
		{"size zero", equal(3), 0},
		{"size too large", equal(3), 1048583},
		{"more backends than slots", equal(20), 7},
		{"duplicate id", []Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 1, Key: "b", Weight: 1}}, 7},
		{"duplicate key", []Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 2, Key: "a", Weight: 1}}, 7},
		{"all drained", []Backend{{ID: 1, Key: "a"}}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Maglev(tc.have, tc.size); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func BenchmarkMaglev65537x100(b *testing.B) {
	backends := equal(100)
	for b.Loop() {
		if _, err := Maglev(backends, DefaultMaglevSize); err != nil {
			b.Fatal(err)
		}
	}
}
