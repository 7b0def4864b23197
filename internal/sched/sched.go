// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Backend is one real server as the table builders see it.
type Backend struct {
	ID     uint32 // index of the real in the data path's reals array
	Key    string // stable identity used for hashing, e.g. "10.0.0.1:80"
	Weight uint32 // 0 = drained: never placed in a table
}

// DefaultMaglevSize is the Maglev table size xlb uses unless told
// otherwise: a prime well above 100 x the reals of a typical service.
const DefaultMaglevSize = 65537

// MaxTableSize bounds the length of any table.
const MaxTableSize = 1 << 20

// ErrNoBackends means no backend has a weight above zero: the table would
// be empty.
var ErrNoBackends = errors.New("sched: no backend with weight > 0")

// validate checks for duplicate ids and keys and returns the backends
// with weight > 0.
func validate(backends []Backend) ([]Backend, error) {
	ids := make(map[uint32]bool, len(backends))
	keys := make(map[string]bool, len(backends))
	live := make([]Backend, 0, len(backends))
	for _, b := range backends {
		if ids[b.ID] {
			return nil, fmt.Errorf("sched: backend id %d listed twice", b.ID)
		}
		if keys[b.Key] {
			return nil, fmt.Errorf("sched: backend %q listed twice", b.Key)
		}
		ids[b.ID], keys[b.Key] = true, true
		if b.Weight > 0 {
			live = append(live, b)
		}
	}
	if len(live) == 0 {
		return nil, ErrNoBackends
	}
	return live, nil
}

// RoundRobin returns the ids of the backends with weight > 0 in the given
// order; weights otherwise do not matter (ipvsadm's rr).
func RoundRobin(backends []Backend) ([]uint32, error) {
	live, err := validate(backends)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(live))
	for i, b := range live {
		out[i] = b.ID
	}
	return out, nil
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// SmoothWRR returns one full cycle of smooth weighted round robin (the
// nginx algorithm): each backend appears weight/g times in a cycle of
// sum(weight)/g, where g is the weights' greatest common divisor, and the
// heavy ones are interleaved with the light ones instead of bunched
// (weights 5,1,1 give a a b a c a a).
func SmoothWRR(backends []Backend) ([]uint32, error) {
	live, err := validate(backends)
	if err != nil {
		return nil, err
	}
	g := live[0].Weight
	for _, b := range live[1:] {
		g = gcd(g, b.Weight)
	}
	weights := make([]int64, len(live))
	var total int64
	for i, b := range live {
		weights[i] = int64(b.Weight / g)
		total += weights[i]
	}
	if total > MaxTableSize {
		return nil, fmt.Errorf("sched: weighted cycle of %d entries exceeds %d", total, MaxTableSize)
	}
	current := make([]int64, len(live))
	out := make([]uint32, total)
	for n := range out {
		best := 0
		for i := range live {
			current[i] += weights[i]
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out[n] = live[best].ID
	}
	return out, nil
}

// IsPrime tells whether n is prime.
func IsPrime(n uint32) bool {
	if n < 2 {
		return false
	}
	for d := uint32(2); uint64(d)*uint64(d) <= uint64(n); d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// hash64 is FNV-1a over a seed byte and the key, finished with the
// splitmix64 mixer so that nearby keys ("10.0.0.1:80", "10.0.0.2:80")
// land far apart. It is fixed across runs and architectures: tables, and
// so the reals flows map to, survive a restart or an upgrade.
func hash64(seed byte, key string) uint64 {
	h := uint64(14695981039346656037)
	h = (h ^ uint64(seed)) * 1099511628211
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Maglev populates a Maglev lookup table of a prime size (Eisenbud et al.,
// NSDI 2016). Each backend walks its own permutation of the slots,
// (offset + j*skip) mod size, from two hashes of its key, and takes the
// next free slot on its turn.
//
// Weights: in round r a backend of weight w takes a turn when
// floor((r+1)*w/max) > floor(r*w/max), where max is the largest weight;
// the heaviest backends take a turn every round, a backend of half their
// weight every other round, so each ends with a share of the table
// proportional to its weight. With equal weights this is plain Maglev:
// shares differ by at most one slot.
func Maglev(backends []Backend, size uint32) ([]uint32, error) {
	if size == 0 || !IsPrime(size) {
		return nil, fmt.Errorf("sched: maglev table size %d is not a prime", size)
	}
	if size > MaxTableSize {
		return nil, fmt.Errorf("sched: maglev table size %d exceeds %d", size, MaxTableSize)
	}
	live, err := validate(backends)
	if err != nil {
		return nil, err
	}
	if uint32(len(live)) > size {
		return nil, fmt.Errorf("sched: %d backends do not fit a maglev table of %d", len(live), size)
	}
	// The table must not depend on the order the reals are listed in.
	slices.SortFunc(live, func(a, b Backend) int { return strings.Compare(a.Key, b.Key) })

	m := uint64(size)
	offset := make([]uint64, len(live))
	skip := make([]uint64, len(live))
	next := make([]uint64, len(live))
	var maxWeight uint64
	for i, b := range live {
		offset[i] = hash64(1, b.Key) % m
		skip[i] = hash64(2, b.Key)%(m-1) + 1
		maxWeight = max(maxWeight, uint64(b.Weight))
	}

	const empty = ^uint32(0)
	table := make([]uint32, size)
	for i := range table {
		table[i] = empty
	}
	filled := uint64(0)
	for round := uint64(0); filled < m; round++ {
		for i, b := range live {
			w := uint64(b.Weight)
			if (round+1)*w/maxWeight == round*w/maxWeight {
				continue // not this backend's turn in this round
			}
			// the next slot of i's permutation that is still free
			for {
				slot := (offset[i] + next[i]*skip[i]) % m
				next[i]++
				if table[slot] == empty {
					table[slot] = b.ID
					filled++
					break
				}
			}
			if filled == m {
				break
			}
		}
	}
	return table, nil
}
