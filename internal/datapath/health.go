// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// What the control plane changes about reals while they run: health
// (checks take a failed real out of scheduling), least-connection
// weights (recomputed every period), and the connections and counters
// an operator resets.

// findReal returns the service's state and the index of its real ap.
func (d *Datapath) findReal(k loadbalancer.ServiceKey, ap netip.AddrPort) (*serviceState, int, error) {
	st, ok := d.reg.services[k]
	if !ok {
		return nil, 0, fmt.Errorf("service %s: %w", k, loadbalancer.ErrNotFound)
	}
	i := slices.IndexFunc(st.reals, func(r realState) bool { return r.real.AddrPort() == ap })
	if i < 0 {
		return nil, 0, fmt.Errorf("real %s of %s: %w", ap, k, loadbalancer.ErrNotFound)
	}
	return st, i, nil
}

// SetRealHealth marks a real up or down. A down real leaves the schedule
// table (no new connections; persistence does not pick it either) and
// keeps its connections; up brings it back with its weight. Setting the
// state it already has changes nothing.
func (d *Datapath) SetRealHealth(k loadbalancer.ServiceKey, ap netip.AddrPort, up bool) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	st, i, err := d.findReal(k, ap)
	if err != nil {
		return fmt.Errorf("set health: %w", err)
	}
	if st.reals[i].down == !up {
		return nil
	}
	next := slices.Clone(st.reals)
	next[i].down = !up
	if err := d.recordReal(next[i].id, next[i].real, st.id, next[i].flags()); err != nil {
		return fmt.Errorf("set health of %s: %w", ap, err)
	}
	if err := d.swapTable(st.id, st.svc, next); err != nil {
		_ = d.recordReal(st.reals[i].id, st.reals[i].real, st.id, st.reals[i].flags())
		return fmt.Errorf("set health of %s: %w", ap, err)
	}
	st.reals = next
	return nil
}

// RealDown reports whether a real of a service is marked down (false
// when there is no such real).
func (d *Datapath) RealDown(k loadbalancer.ServiceKey, ap netip.AddrPort) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, i, err := d.findReal(k, ap)
	return err == nil && st.reals[i].down
}

// SetLeastConnWeights installs the weights an lc or wlc service
// schedules its reals with until the next call (reals not named get 0).
// The table is rebuilt only when a weight changed.
func (d *Datapath) SetLeastConnWeights(k loadbalancer.ServiceKey, weights map[netip.AddrPort]uint32) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	st, ok := d.reg.services[k]
	if !ok {
		return fmt.Errorf("least-connection weights: service %s: %w", k, loadbalancer.ErrNotFound)
	}
	if st.svc.Scheduler != loadbalancer.LeastConn && st.svc.Scheduler != loadbalancer.WeightedLeastConn {
		return fmt.Errorf("least-connection weights: service %s schedules %s", k, st.svc.Scheduler)
	}
	next := slices.Clone(st.reals)
	changed := false
	for i := range next {
		w := weights[next[i].real.AddrPort()]
		if !next[i].lcSet || next[i].lcWeight != w {
			next[i].lcWeight, next[i].lcSet, changed = w, true, true
		}
	}
	if !changed {
		return nil
	}
	if err := d.swapTable(st.id, st.svc, next); err != nil {
		return fmt.Errorf("least-connection weights of %s: %w", k, err)
	}
	st.reals = next
	return nil
}

// FlushRealConns removes the connections of one real of a service, both
// entries of each, and returns how many connections it removed. Their
// next packets find no connection: a TCP client's is answered by the
// host (RST, the VIP has no listener), a UDP flow is scheduled anew.
func (d *Datapath) FlushRealConns(k loadbalancer.ServiceKey, ap netip.AddrPort) (int, error) {
	d.mu.Lock()
	st, i, err := d.findReal(k, ap)
	var svcID, realID uint16
	if err == nil {
		svcID, realID = uint16(st.id), uint16(st.reals[i].id)
	}
	d.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("flush connections: %w", err)
	}
	n, err := d.deleteConns(func(e xlbCtEntry) (del, fwd bool) {
		return e.SvcId == svcID && e.RealId == realID, e.Flags&ctFReverse == 0
	})
	if err != nil {
		return n, fmt.Errorf("flush connections of %s: %w", ap, err)
	}
	return n, nil
}

// ZeroCounters zeroes the packet, byte and connection counters of one
// service and its reals (ipvsadm -Z -t ...), or of every service, and the
// drop, verdict and local IPs' no_lport counters too, when k is nil
// (ipvsadm -Z).
func (d *Datapath) ZeroCounters(k *loadbalancer.ServiceKey) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	zero := make([]xlbXlbCounters, d.cpus)
	zeroSvc := func(st *serviceState) error {
		if err := d.objs.SvcStats.Put(st.id, zero); err != nil {
			return fmt.Errorf("zero svc_stats[%d]: %w", st.id, err)
		}
		if err := d.zeroU64(d.objs.SvcNoLport, st.id); err != nil {
			return err
		}
		for _, r := range st.reals {
			if err := d.objs.RealStats.Put(r.id, zero); err != nil {
				return fmt.Errorf("zero real_stats[%d]: %w", r.id, err)
			}
		}
		return nil
	}
	if k != nil {
		st, ok := d.reg.services[*k]
		if !ok {
			return fmt.Errorf("zero counters: service %s: %w", *k, loadbalancer.ErrNotFound)
		}
		return zeroSvc(st)
	}
	for _, st := range d.reg.services {
		if err := zeroSvc(st); err != nil {
			return err
		}
	}
	zeros := make([]uint64, d.cpus)
	for _, m := range []*ebpf.Map{d.objs.DropStats, d.objs.VerdictStats, d.objs.EventStats, d.objs.LaddrNoLport} {
		for i := range m.MaxEntries() {
			if err := m.Put(i, zeros); err != nil {
				return fmt.Errorf("zero %s[%d]: %w", m, i, err)
			}
		}
	}
	return nil
}
