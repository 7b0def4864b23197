// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
)

// Backend is one real server as the table builders see it.
type Backend struct {
	ID     uint32 // index of the real in the data path's reals array
	Key    string // stable identity used for hashing, e.g. "10.0.0.1:80"
	Weight uint32 // 0 = drained: never placed in a table
}

// DefaultMaglevSize is the Maglev table size used unless a service asks
// for another: the smallest prime above 2^16, which keeps a service of up
// to a few hundred reals within a fraction of a percent of even shares
// while the table still fits in 256 KiB.
const DefaultMaglevSize = 65537

// MaxTableSize bounds the length of any table, so that a bad weight or size
// in a config cannot make the control plane allocate (and the kernel hold)
// an absurd map.
const MaxTableSize = 1 << 20

// ErrNoBackends means no backend has a weight above zero, so the table
// would be empty. It is returned as is, never wrapped, because the data
// path treats it as "install an empty table" rather than as a failure.
var ErrNoBackends = errors.New("sched: no backend with weight > 0")

// ErrDuplicate means two backends share an ID or a Key. Errors wrapping it
// name the duplicate.
var ErrDuplicate = errors.New("sched: duplicate backend")

// ErrTableSize means the requested or resulting table length is not
// usable: a Maglev size that is not a prime, above [MaxTableSize] or below
// the number of backends, or a weighted cycle longer than [MaxTableSize].
var ErrTableSize = errors.New("sched: bad table size")

// validate rejects duplicate IDs and Keys and returns the backends with
// weight > 0, in the given order. Duplicates among drained backends are
// rejected too: they are a config error whether or not they are in service.
func validate(backends []Backend) ([]Backend, error) {
	ids := make(map[uint32]string, len(backends))
	keys := make(map[string]uint32, len(backends))
	live := make([]Backend, 0, len(backends))
	for _, b := range backends {
		if key, ok := ids[b.ID]; ok {
			return nil, fmt.Errorf("%w: id %d used by %q and %q", ErrDuplicate, b.ID, key, b.Key)
		}
		if id, ok := keys[b.Key]; ok {
			return nil, fmt.Errorf("%w: key %q used by ids %d and %d", ErrDuplicate, b.Key, id, b.ID)
		}
		ids[b.ID], keys[b.Key] = b.Key, b.ID
		if b.Weight > 0 {
			live = append(live, b)
		}
	}
	if len(live) == 0 {
		return nil, ErrNoBackends
	}
	return live, nil
}

// RoundRobin returns the IDs of backends with weight > 0 in the given order
// (weights otherwise ignored), as ipvsadm's rr does: every in-service real
// gets the same share whatever its weight.
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

// IsPrime reports whether n is a prime number. Trial division is enough:
// it runs once per table build and n < 2^32 needs at most ~22k divisions.
func IsPrime(n uint32) bool {
	switch {
	case n < 2:
		return false
	case n < 4:
		return true
	case n%2 == 0 || n%3 == 0:
		return false
	}
	// Every prime above 3 is 6k-1 or 6k+1.
	for d := uint64(5); d*d <= uint64(n); d += 6 {
		if uint64(n)%d == 0 || uint64(n)%(d+2) == 0 {
			return false
		}
	}
	return true
}
