// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// equal returns n backends of weight 1 with IDs 0..n-1 and address-like
// keys, the shape of a real service's reals.
func equal(n int) []Backend {
	out := make([]Backend, n)
	for i := range out {
		out[i] = Backend{ID: uint32(i), Key: fmt.Sprintf("10.0.%d.%d:80", i/250, i%250+1), Weight: 1}
	}
	return out
}

// weighted returns one backend per weight, IDs 1.. and keys "r1", "r2"...
func weighted(weights ...uint32) []Backend {
	out := make([]Backend, len(weights))
	for i, w := range weights {
		out[i] = Backend{ID: uint32(i + 1), Key: fmt.Sprintf("r%d", i+1), Weight: w}
	}
	return out
}

// counts returns how many entries of table each ID holds.
func counts(table []uint32) map[uint32]int {
	out := map[uint32]int{}
	for _, id := range table {
		out[id]++
	}
	return out
}

func TestIsPrime(t *testing.T) {
	for _, tc := range []struct {
		name string
		have uint32
		want bool
	}{
		{"zero", 0, false},
		{"one", 1, false},
		{"two", 2, true},
		{"three", 3, true},
		{"four", 4, false},
		{"square of 5", 25, false},
		{"square of 7", 49, false},
		{"small prime", 251, true},
		{"2^16", 65536, false},
		{"default maglev size", 65537, true},
		{"largest prime below 2^20", 1048573, true},
		{"2^20", 1 << 20, false},
		{"product of two primes near 2^16", 65521 * 65537, false},
		{"largest 32-bit prime", 4294967291, true},
		{"2^32-1", 1<<32 - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsPrime(tc.have); got != tc.want {
				t.Errorf("IsPrime(%d) = %v, want %v", tc.have, got, tc.want)
			}
		})
	}
}

func TestRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []Backend
		want []uint32
		err  error
	}{
		{"given order, weights ignored", []Backend{{ID: 7, Key: "b", Weight: 1}, {ID: 3, Key: "a", Weight: 9}}, []uint32{7, 3}, nil},
		{"drained skipped", []Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 2, Key: "b"}, {ID: 3, Key: "c", Weight: 2}}, []uint32{1, 3}, nil},
		{"all drained", []Backend{{ID: 1, Key: "a"}, {ID: 2, Key: "b"}}, nil, ErrNoBackends},
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

func TestSmoothWRRSequence(t *testing.T) {
	const a, b, c = 1, 2, 3 // IDs weighted() gives the first three weights
	for _, tc := range []struct {
		name string
		have []uint32 // weights of a, b, c
		want []uint32
	}{
		{"5:1:1 interleaved", []uint32{5, 1, 1}, []uint32{a, a, b, a, c, a, a}},
		{"2:2 reduced by gcd", []uint32{2, 2}, []uint32{a, b}},
		{"6:3 reduced by gcd", []uint32{6, 3}, []uint32{a, b, a}},
		{"3:0:1 drained skipped", []uint32{3, 0, 1}, []uint32{a, a, c, a}},
		{"equal weights keep the given order", []uint32{4, 4, 4}, []uint32{a, b, c}},
		{"single backend", []uint32{9}, []uint32{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SmoothWRR(weighted(tc.have...))
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestSmoothWRRCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []uint32 // weights
		want int      // cycle length
	}{
		{"5:1:1", []uint32{5, 1, 1}, 7},
		{"2:2", []uint32{2, 2}, 2},
		{"100:50:0:25", []uint32{100, 50, 0, 25}, 7},
		{"coprime", []uint32{7, 11, 13}, 31},
		{"skewed", []uint32{1000, 1}, 1001},
		{"large equal", []uint32{1 << 31, 1 << 31, 1 << 31}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := weighted(tc.have...)
			got, err := SmoothWRR(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("cycle of %d entries, want %d", len(got), tc.want)
			}
			if n := CycleLength(tc.have); n != uint64(tc.want) {
				t.Errorf("CycleLength = %d, the table has %d", n, tc.want)
			}
			var sum uint64
			for _, w := range tc.have {
				sum += uint64(w)
			}
			seen := counts(got)
			for _, b := range in {
				// each backend appears weight/gcd times = weight*len/sum
				if want := int(uint64(b.Weight) * uint64(tc.want) / sum); seen[b.ID] != want {
					t.Errorf("backend %d (weight %d) appears %d times, want %d", b.ID, b.Weight, seen[b.ID], want)
				}
			}
			// Smooth: for these weights a backend's picks never stray a
			// whole pick from its exact pro rata count at any point of the
			// cycle (a bunched a a a a a b c strays 1.43 after five). This
			// is not a bound for every weight set: random ones stray up to
			// ~1.07.
			for _, b := range in {
				n := 0
				for i, id := range got {
					if id == b.ID {
						n++
					}
					exact := float64(b.Weight) * float64(i+1) / float64(sum)
					if d := float64(n) - exact; d >= 1 || d <= -1 {
						t.Fatalf("backend %d has %d picks after %d, pro rata %.2f", b.ID, n, i+1, exact)
					}
				}
			}
		})
	}
}

// TestCycleLength covers what SmoothWRR cannot build: no weight, and
// cycles beyond MaxTableSize (what a configuration is checked against).
func TestCycleLength(t *testing.T) {
	heavy := make([]uint32, 17)
	for i := range heavy {
		heavy[i] = 65535
	}
	for _, tc := range []struct {
		name string
		have []uint32
		want uint64
	}{
		{"none", nil, 0},
		{"all drained", []uint32{0, 0}, 0},
		{"one", []uint32{9}, 1},
		{"beyond a table", append(heavy, 1), 17*65535 + 1},
		{"every weight the largest", []uint32{1<<32 - 1, 1<<32 - 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CycleLength(tc.have); got != tc.want {
				t.Errorf("CycleLength(%v) = %d, want %d", tc.have, got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	three := equal(3)
	dupID := []Backend{{ID: 1, Key: "10.0.0.1:80", Weight: 1}, {ID: 1, Key: "10.0.0.2:80", Weight: 1}}
	dupKey := []Backend{{ID: 1, Key: "10.0.0.1:80", Weight: 1}, {ID: 2, Key: "10.0.0.1:80", Weight: 1}}
	dupDrained := []Backend{{ID: 1, Key: "a", Weight: 1}, {ID: 2, Key: "b"}, {ID: 2, Key: "c"}}
	var tooLong []Backend // reduced cycle of 20 * 65535 entries > 2^20
	for i := range 20 {
		tooLong = append(tooLong, Backend{ID: uint32(i), Key: fmt.Sprint(i), Weight: 65535 - uint32(i%2)})
	}
	maglev := func(size uint32) func([]Backend) ([]uint32, error) {
		return func(b []Backend) ([]uint32, error) { return Maglev(b, size) }
	}
	for _, tc := range []struct {
		name  string
		build func([]Backend) ([]uint32, error)
		have  []Backend
		want  error
		names string // the error must mention this
	}{
		{"maglev size not prime", maglev(65536), three, ErrTableSize, "65536"},
		{"maglev size zero", maglev(0), three, ErrTableSize, "size 0"},
		{"maglev size one", maglev(1), three, ErrTableSize, "size 1"},
		{"maglev size prime above max", maglev(1048583), three, ErrTableSize, "1048583"},
		{"maglev more backends than slots", maglev(7), equal(20), ErrTableSize, "20 backends"},
		{"maglev duplicate id", maglev(7), dupID, ErrDuplicate, "id 1"},
		{"maglev duplicate key", maglev(7), dupKey, ErrDuplicate, `"10.0.0.1:80"`},
		{"maglev duplicate among drained", maglev(7), dupDrained, ErrDuplicate, "id 2"},
		{"maglev all drained", maglev(7), []Backend{{ID: 1, Key: "a"}}, ErrNoBackends, "weight"},
		{"rr duplicate id", RoundRobin, dupID, ErrDuplicate, "id 1"},
		{"rr duplicate key", RoundRobin, dupKey, ErrDuplicate, `"10.0.0.1:80"`},
		{"wrr duplicate key", SmoothWRR, dupKey, ErrDuplicate, `"10.0.0.1:80"`},
		{"wrr all drained", SmoothWRR, weighted(0, 0), ErrNoBackends, "weight"},
		{"wrr cycle too long", SmoothWRR, tooLong, ErrTableSize, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.build(tc.have)
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("got %d entries, %v; want error %v", len(got), err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error %q does not mention %s", err, tc.names)
			}
		})
	}
}

// The data path tells "no backend" apart with ==, so it must not be
// wrapped.
func TestErrNoBackendsUnwrapped(t *testing.T) {
	if _, err := Maglev(weighted(0), 7); err != ErrNoBackends {
		t.Errorf("got %v, want ErrNoBackends itself", err)
	}
}
