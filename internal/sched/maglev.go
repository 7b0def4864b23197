// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Maglev populates a Maglev lookup table of the given prime size
// (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
// Balancer", NSDI 2016). Entries hold backend IDs; the data path indexes
// the table by a flow hash modulo size.
//
// Each backend with weight > 0 walks its own permutation of the slots,
// slot(j) = (offset + j*skip) mod size, with offset and skip taken from
// two independent 64-bit hashes of its Key. Because size is prime and
// 0 < skip < size, every permutation visits every slot. Backends take turns
// in rounds, in Key order, and on its turn a backend claims the next slot
// of its permutation that is still free. A backend's early picks depend
// only on its own Key, so adding or removing one backend moves few of the
// others' slots.
//
// Weights: before filling, each backend gets a quota of slots: one, so
// that every in-service backend is reachable however light, plus its
// weight-proportional share of the other size-n slots (largest remainder
// rounding, ties to the lower Key). A backend takes turns only while it has
// placed fewer entries than its quota; the quotas add up to size, so the
// table ends exactly full. With equal weights this is the paper's
// algorithm: shares differ by at most one slot. With unequal weights each
// share is within one slot of 1 + (size-n)*weight/sum(weights).
//
// The table depends only on the set of backends, not on their order, and
// is the same on every run and architecture. Maglev fails with
// [ErrTableSize] when size is not a prime, is above [MaxTableSize] or is
// below the number of backends with weight > 0, with [ErrDuplicate] on a
// repeated ID or Key, and with [ErrNoBackends] when no weight is above 0.
func Maglev(backends []Backend, size uint32) ([]uint32, error) {
	if size > MaxTableSize {
		return nil, fmt.Errorf("%w: maglev table size %d exceeds %d", ErrTableSize, size, MaxTableSize)
	}
	if !IsPrime(size) {
		return nil, fmt.Errorf("%w: maglev table size %d is not a prime", ErrTableSize, size)
	}
	live, err := validate(backends)
	if err != nil {
		return nil, err
	}
	if uint64(len(live)) > uint64(size) {
		return nil, fmt.Errorf("%w: %d backends do not fit a maglev table of %d entries", ErrTableSize, len(live), size)
	}
	// Turn order and quota ties must not depend on how the caller listed
	// the reals; Keys are unique, so this order is total.
	slices.SortFunc(live, func(a, b Backend) int { return strings.Compare(a.Key, b.Key) })

	quota := maglevQuotas(live, size)
	pos := make([]uint32, len(live))  // next slot of each permutation
	skip := make([]uint32, len(live)) // permutation step, in [1, size)
	for i, b := range live {
		pos[i] = uint32(keyHash(b.Key, seedOffset) % uint64(size))
		skip[i] = uint32(keyHash(b.Key, seedSkip)%uint64(size-1)) + 1
	}

	table := make([]uint32, size)
	taken := make([]bool, size) // kept apart so that no ID is reserved as "empty"
	placed := make([]uint32, len(live))
	active := make([]int, len(live))
	for i := range active {
		active[i] = i
	}
	for len(active) > 0 {
		// One round: each backend still under its quota claims one slot.
		// The ones that reach their quota drop out of later rounds; active
		// is compacted in place, never ahead of the read index.
		next := active[:0]
		for _, i := range active {
			p := pos[i]
			for taken[p] {
				p = step(p, skip[i], size)
			}
			table[p], taken[p] = live[i].ID, true
			pos[i] = step(p, skip[i], size)
			placed[i]++
			if placed[i] < quota[i] {
				next = append(next, i)
			}
		}
		active = next
	}
	return table, nil
}

// step advances a permutation by one: (p + skip) mod size, without a
// division since both terms are below size (size <= 2^20, no overflow).
func step(p, skip, size uint32) uint32 {
	p += skip
	if p >= size {
		p -= size
	}
	return p
}

// maglevQuotas returns how many slots each backend (sorted by Key, all of
// weight > 0, at most size of them) gets in a table of size entries: one
// each, plus the remaining size-n slots split in proportion to weight by
// largest remainder. The quotas add up to size exactly.
func maglevQuotas(live []Backend, size uint32) []uint32 {
	n := uint64(len(live))
	spare := uint64(size) - n
	var sum uint64 // < 2^20 * 2^32: no overflow
	for _, b := range live {
		sum += uint64(b.Weight)
	}
	quota := make([]uint32, len(live))
	rem := make([]uint64, len(live))
	given := n
	for i, b := range live {
		// spare*weight < 2^20 * 2^32 fits in 64 bits.
		share := spare * uint64(b.Weight)
		quota[i] = 1 + uint32(share/sum)
		rem[i] = share % sum
		given += share / sum
	}
	// Fewer than n slots are left by the rounding down; they go to the
	// largest remainders, ties to the lower Key (the lower index).
	order := make([]int, len(live))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
	for _, i := range order[:uint64(size)-given] {
		quota[i]++
	}
	return quota
}

// Seeds of the two Key hashes. Any two distinct values would do; they are
// fixed forever because changing them would reshuffle every Maglev table
// and so every flow of every service on upgrade.
const (
	seedOffset uint64 = 0x6d61676c65762d6f // "maglev-o"
	seedSkip   uint64 = 0x6d61676c65762d73 // "maglev-s"
)

// keyHash is a 64-bit hash of key under seed: FNV-1a over the seed's and
// the key's bytes, finished with the splitmix64 mixer because FNV alone
// leaves keys that differ in their last byte ("10.0.0.1:80", "10.0.0.2:80")
// too close in the low bits that the modulo keeps. It reads bytes, not
// machine words, so it is the same on every architecture.
func keyHash(key string, seed uint64) uint64 {
	const (
		fnvOffset = 14695981039346656037
		fnvPrime  = 1099511628211
	)
	h := uint64(fnvOffset)
	for i := 0; i < 64; i += 8 {
		h = (h ^ (seed >> i & 0xff)) * fnvPrime
	}
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * fnvPrime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
