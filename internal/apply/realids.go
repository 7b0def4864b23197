// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Real ids on the way of a transition. The data path gives a service's
// new reals their ids before it frees those of the reals they replace
// (the old schedule table names them until the new one is in), so a
// transition needs, at each real list it sets, the ids in use plus that
// list's new reals: more than either end holds when a list is replaced
// while the data path is nearly full.

// realListChange is what setting one service's real list does to the
// real ids in use.
type realListChange struct {
	key            loadbalancer.ServiceKey
	added, removed int
}

// realListChanges counts, for each real list to set, the reals new to
// the service and those it loses, by address and port (a real that stays
// keeps its id whatever its weight).
func realListChanges(from *config.Desired, lists map[loadbalancer.ServiceKey][]loadbalancer.Real) []realListChange {
	out := make([]realListChange, 0, len(lists))
	for k, reals := range lists {
		had := map[netip.AddrPort]bool{}
		for _, r := range from.Reals[k] {
			had[r.AddrPort()] = true
		}
		c := realListChange{key: k}
		for _, r := range reals {
			if had[r.AddrPort()] {
				delete(had, r.AddrPort())
			} else {
				c.added++
			}
		}
		c.removed = len(had)
		out = append(out, c)
	}
	return out
}

// realsOrder orders the real lists to set so that the ids in use peak as
// low as they can: first the lists that free at least as many ids as
// they take, those taking fewest first, then the others, those freeing
// most first. Ties go by service key, so equal inputs give equal orders.
func realsOrder(from *config.Desired, lists map[loadbalancer.ServiceKey][]loadbalancer.Real) []loadbalancer.ServiceKey {
	changes := realListChanges(from, lists)
	slices.SortFunc(changes, compareListChanges)
	keys := make([]loadbalancer.ServiceKey, len(changes))
	for i, c := range changes {
		keys[i] = c.key
	}
	return keys
}

func compareListChanges(a, b realListChange) int {
	shrinks := func(c realListChange) bool { return c.added <= c.removed }
	switch {
	case shrinks(a) && !shrinks(b):
		return -1
	case !shrinks(a) && shrinks(b):
		return 1
	case shrinks(a):
		return cmp.Or(cmp.Compare(a.added, b.added), compareKeys(a.key, b.key))
	}
	return cmp.Or(cmp.Compare(b.removed, a.removed), compareKeys(a.key, b.key))
}

func compareKeys(a, b loadbalancer.ServiceKey) int { return cmp.Compare(a.String(), b.String()) }

// checkRealIDs refuses, as a validation error naming the real list, a
// transition that would need more real ids at some step than the data
// path has (limit; 0 is not checked), with the lists in realsOrder.
func checkRealIDs(limit int, from, next *config.Desired, c config.Changes) error {
	if limit <= 0 {
		return nil
	}
	inUse := 0
	for _, reals := range from.Reals {
		inUse += len(reals)
	}
	for _, k := range c.Remove {
		inUse -= len(from.Reals[k])
	}
	changes := realListChanges(from, c.SetReals)
	slices.SortFunc(changes, compareListChanges)
	for _, ch := range changes {
		if inUse+ch.added > limit {
			i := slices.IndexFunc(next.Services, func(s loadbalancer.Service) bool { return s.Key == ch.key })
			return config.Problem(config.ErrCapacity, fmt.Sprintf("services[%d].reals", i),
				"its %d new reals need an id each before the %d they replace free theirs, "+
					"and only %d of the data path's %d (max_reals) are free then: "+
					"apply the change in two steps (remove first, then add)", ch.added, ch.removed, limit-inUse, limit)
		}
		inUse += ch.added - ch.removed
	}
	return nil
}
