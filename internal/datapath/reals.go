// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"slices"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/sched"
)

// SetReals replaces a service's reals. Reals that stay keep their id and
// connections; new ones get an id; the schedule table is rebuilt and
// swapped in one update. A removed real's connections continue until they
// end (as IPVS keeps a removed destination's connections).
func (d *Datapath) SetReals(k loadbalancer.ServiceKey, reals []loadbalancer.Real) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	st, ok := d.reg.services[k]
	if !ok {
		return fmt.Errorf("set reals of %s: %w", k, loadbalancer.ErrNotFound)
	}
	if err := loadbalancer.ValidateReals(k, reals); err != nil {
		return fmt.Errorf("set reals of %s: %w", k, err)
	}

	next := make([]realState, 0, len(reals))
	// What to put back if a step fails, so that the maps say what the
	// registry says (a restart reads the records back): the records of
	// kept reals whose weight was rewritten, and those of the ids new
	// reals took (a free id's record may still forward the connections
	// of the real it had), with the ids freed again.
	type takenID struct {
		id  uint32
		was xlbReal
	}
	var reweighted []realState
	var taken []takenID
	undo := func(err error) error {
		errs := []error{fmt.Errorf("set reals of %s: %w", k, err)}
		for _, r := range reweighted {
			errs = append(errs, d.recordReal(r.id, r.real, st.id, r.flags()))
		}
		for _, t := range taken {
			if err := d.objs.Reals.Put(t.id, t.was); err != nil {
				errs = append(errs, fmt.Errorf("restore reals[%d]: %w", t.id, err))
			}
			d.reg.realIDs.put(t.id)
		}
		return errors.Join(errs...)
	}
	for _, r := range reals {
		i := slices.IndexFunc(st.reals, func(o realState) bool { return o.real.AddrPort() == r.AddrPort() })
		if i >= 0 {
			kept := st.reals[i]
			if kept.real.Weight != r.Weight { // keep the record's weight current
				reweighted = append(reweighted, kept)
				if err := d.recordReal(kept.id, r, st.id, kept.flags()); err != nil {
					return undo(err)
				}
			}
			kept.real = r
			next = append(next, kept)
			continue
		}
		id, err := d.takeID(&d.reg.realIDs)
		if err != nil {
			return undo(fmt.Errorf("real %s: %w", r.AddrPort(), err))
		}
		t := takenID{id: id}
		if err := d.objs.Reals.Lookup(id, &t.was); err != nil {
			d.reg.realIDs.put(id)
			return undo(fmt.Errorf("real %s: read reals[%d]: %w", r.AddrPort(), id, err))
		}
		taken = append(taken, t)
		ns := realState{id: id, real: r, unresolved: d.unresolved[r.Addr]}
		if err := d.writeReal(ns, st.id); err != nil {
			return undo(fmt.Errorf("real %s: %w", r.AddrPort(), err))
		}
		next = append(next, ns)
	}
	if err := d.swapTable(st.id, st.svc, next); err != nil {
		return undo(err)
	}
	for _, old := range st.reals {
		if !slices.ContainsFunc(next, func(n realState) bool { return n.id == old.id }) {
			d.freeReal(old)
		}
	}
	st.reals = next
	return nil
}

// Flags of reals entries (enum xlb_real_flags, from the object).
const (
	// realFInUse: the real's id belongs to a service.
	realFInUse = uint8(xlbXlbRealFlagsXLB_REAL_F_IN_USE)
	// realFDown: the real failed its health check; persistence does not
	// send new connections to it.
	realFDown = uint8(xlbXlbRealFlagsXLB_REAL_F_DOWN)
	// realFUnresolved: its next hop is not resolved; persistence does
	// not send new connections to it either.
	realFUnresolved = uint8(xlbXlbRealFlagsXLB_REAL_F_UNRESOLVED)
)

// flags returns the real's entry flags while a service has it.
func (r realState) flags() uint8 {
	f := realFInUse
	if r.down {
		f |= realFDown
	}
	if r.unresolved {
		f |= realFUnresolved
	}
	return f
}

// recordReal writes a real's entry: its address for the data path, and
// for a restarted control plane whose it is (see rebuildRegistry).
func (d *Datapath) recordReal(id uint32, r loadbalancer.Real, svcID uint32, flags uint8) error {
	v := xlbReal{Addr: toAddr(r.Addr), Port: htons(r.Port), Family: familyOf(r.Addr), Flags: flags, SvcId: svcID, Weight: r.Weight}
	if err := d.objs.Reals.Put(id, v); err != nil {
		return fmt.Errorf("write reals[%d]: %w", id, err)
	}
	return nil
}

// freeReal gives a removed real's id back. The entry keeps the address,
// so the real's connections are forwarded until they end, but is no
// longer marked in use.
func (d *Datapath) freeReal(r realState) {
	_ = d.recordReal(r.id, r.real, 0, 0)
	d.reg.realIDs.hold(r.id)
}

// writeReal writes a new real's entry and zeroes its counters and cached
// next hop (the id may have served another real before).
func (d *Datapath) writeReal(r realState, svcID uint32) error {
	id := r.id
	if err := d.recordReal(id, r.real, svcID, r.flags()); err != nil {
		return err
	}
	zero := make([]xlbXlbCounters, d.cpus)
	if err := d.objs.RealStats.Put(id, zero); err != nil {
		return fmt.Errorf("reset real_stats[%d]: %w", id, err)
	}
	// the next hop cached for the id's previous real is not this one's
	if err := d.objs.RealNexthops.Put(id, xlbFibCacheEntry{}); err != nil {
		return fmt.Errorf("reset real_nexthops[%d]: %w", id, err)
	}
	return nil
}

// Reals returns a service's reals.
func (d *Datapath) Reals(k loadbalancer.ServiceKey) ([]loadbalancer.Real, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.reg.services[k]
	if !ok {
		return nil, fmt.Errorf("reals of %s: %w", k, loadbalancer.ErrNotFound)
	}
	out := make([]loadbalancer.Real, len(st.reals))
	for i, r := range st.reals {
		out[i] = r.real
	}
	return out, nil
}

// buildTable computes a service's schedule table from its reals.
func buildTable(svc loadbalancer.Service, reals []realState) ([]uint32, error) {
	backends := make([]sched.Backend, len(reals))
	for i, r := range reals {
		backends[i] = sched.Backend{ID: r.id, Key: r.real.AddrPort().String(), Weight: r.tableWeight(svc.Scheduler)}
	}
	var (
		table []uint32
		err   error
	)
	switch svc.Scheduler {
	case loadbalancer.RoundRobin:
		table, err = sched.RoundRobin(backends)
	case loadbalancer.WeightedRoundRobin, loadbalancer.LeastConn, loadbalancer.WeightedLeastConn:
		table, err = sched.SmoothWRR(backends)
	case loadbalancer.MaglevHash, loadbalancer.SourceHash:
		size := svc.MaglevSize
		if size == 0 {
			size = sched.DefaultMaglevSize
		}
		table, err = sched.Maglev(backends, size)
	default:
		return nil, fmt.Errorf("scheduler %s: no table builder", svc.Scheduler)
	}
	if err == sched.ErrNoBackends {
		return nil, nil // an empty table: new connections dropped as no_real
	}
	return table, err
}

// swapTable builds a new schedule table in a map of its own and installs
// it in sched_tables[id] in one update: slot 0 the length, then real ids.
func (d *Datapath) swapTable(id uint32, svc loadbalancer.Service, reals []realState) error {
	table, err := buildTable(svc, reals)
	if err != nil {
		return fmt.Errorf("build %s table: %w", svc.Scheduler, err)
	}
	inner, err := newSchedTable(table)
	if err != nil {
		return err
	}
	d.installTable(id, inner)
	return nil
}
