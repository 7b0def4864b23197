// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// SetUnresolved sets the real addresses whose next hop the host has not
// resolved. XDP cannot resolve a neighbour: a packet to such a real is
// dropped (no_neigh), so a real at one of them leaves the schedule table
// (no new connections; persistence does not pick it either) and keeps
// its connections, as a failed health check does. The state is kept per
// address, for reals added later too, until the next call; only the
// services with a real whose state changes get a new table.
func (d *Datapath) SetUnresolved(addrs map[netip.Addr]bool) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	d.unresolved = maps.Clone(addrs)
	var errs []error
	for k, st := range d.reg.services {
		next := slices.Clone(st.reals)
		var changed []int
		for i := range next {
			if u := addrs[next[i].real.Addr]; next[i].unresolved != u {
				next[i].unresolved = u
				changed = append(changed, i)
			}
		}
		if len(changed) == 0 {
			continue
		}
		err := d.recordFlags(st.id, next, changed)
		if err == nil {
			err = d.swapTable(st.id, st.svc, next)
		}
		if err != nil {
			// the records say what the registry says, as before
			errs = append(errs, fmt.Errorf("next hops of %s: %w", k, err), d.recordFlags(st.id, st.reals, changed))
			continue
		}
		st.reals = next
	}
	return errors.Join(errs...)
}

// recordFlags rewrites the records of reals[i] for each i of which.
func (d *Datapath) recordFlags(svcID uint32, reals []realState, which []int) error {
	for _, i := range which {
		if err := d.recordReal(reals[i].id, reals[i].real, svcID, reals[i].flags()); err != nil {
			return err
		}
	}
	return nil
}
