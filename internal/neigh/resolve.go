// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// resolvedStates are the neighbour states with a link-layer address the
// data path can forward with.
var resolvedStates = []string{"REACHABLE", "STALE", "DELAY", "PROBE", "PERMANENT", "NOARP"}

// resolvePoll is how often WaitResolved looks again.
const resolvePoll = 10 * time.Millisecond

// WaitResolved waits until the next hop of every destination has a
// link-layer address, or ctx ends, and returns the hops still unresolved.
// The daemon calls it after a Sync that added reals and before the data
// path may schedule them: XDP cannot resolve a neighbour, so a real put
// into service before its next hop resolves loses its first packets.
func (m *Manager) WaitResolved(ctx context.Context, dests []netip.Addr) []Hop {
	var pending []Hop
	for _, dst := range dests {
		h, ok, err := m.routeGet(ctx, dst)
		if err == nil && ok && !slices.Contains(pending, h) {
			pending = append(pending, h)
		}
	}
	for len(pending) > 0 {
		pending = slices.DeleteFunc(pending, func(h Hop) bool {
			e, ok, err := m.show(ctx, h)
			return err == nil && ok && slices.ContainsFunc(e.States, func(s string) bool {
				return slices.Contains(resolvedStates, s)
			})
		})
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return pending
		case <-time.After(resolvePoll):
		}
	}
	return nil
}
