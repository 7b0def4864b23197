// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// managedFlags are the flag sets tried, in order, to add a managed entry:
// extern_learn keeps it from garbage collection as Cilium does; a kernel
// that refuses the combination still gets a managed entry (exempt from
// garbage collection by itself).
var managedFlags = [][]string{{"managed", "extern_learn"}, {"managed"}}

// reconcile resolves the wanted next hops and brings the entries in line:
// ensures each wanted one and deletes the ones it added that are no
// longer wanted. m.mu is held.
func (m *Manager) reconcile(ctx context.Context) error {
	if m.closed {
		return nil
	}
	var errs []error
	synced := map[Hop]bool{}
	if m.lookup != nil {
		for _, nh := range m.lookup.NextHops(m.dests) {
			switch {
			case nh.Dev == "":
				errs = append(errs, errors.New(nh.Reason))
			case nh.Dev != "lo":
				synced[nh.Hop] = true
			}
		}
	} else {
		for _, dst := range m.dests {
			h, ok, err := m.routeGet(ctx, dst)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				synced[h] = true
			}
		}
	}
	for _, dev := range m.ifaces {
		hops, err := m.gateways(ctx, dev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, h := range hops {
			synced[h] = true
		}
	}
	m.synced = synced
	now := m.now()
	for h, t := range m.requested {
		if now.Sub(t) >= m.expiry {
			delete(m.requested, h)
		}
	}
	wanted := map[Hop]bool{}
	for h := range m.synced {
		wanted[h] = true
	}
	for h := range m.requested {
		wanted[h] = true
	}
	if m.mode == modeFallback {
		for h := range wanted {
			errs = append(errs, m.probeHop(h))
		}
		return errors.Join(errs...)
	}
	t, err := m.table(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for h := range wanted {
		e, ok := t[h]
		errs = append(errs, m.ensure(ctx, h, e, ok))
	}
	for h := range m.added {
		if wanted[h] {
			continue
		}
		if e, ok := t[h]; ok && e.Managed && !e.operator() {
			if err := m.del(ctx, h); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		m.disown(h)
	}
	return errors.Join(errs...)
}

// ensure makes h have a managed entry, given its current entry e (if
// present). An operator's entry is left alone (and no longer counted as
// added); a managed one stays as it is. m.mu is held.
func (m *Manager) ensure(ctx context.Context, h Hop, e entry, present bool) error {
	switch {
	case present && e.operator():
		m.disown(h) // the operator took it over
		return nil
	case present && e.Managed:
		if e.ExternLearn {
			return m.own(h) // ours, or a previous run's
		}
		return nil
	}
	return m.add(ctx, h)
}

// add adds a managed entry for h. The first add finds out whether the
// kernel has managed entries; if not, the Manager falls back to probes
// for good. m.mu is held.
func (m *Manager) add(ctx context.Context, h Hop) error {
	switch m.mode {
	case modeFallback:
		return m.probeHop(h)
	case modeManaged:
		if err := m.own(h); err != nil {
			return err
		}
		if err := m.replace(ctx, h, m.flags); err != nil {
			m.disown(h)
			return err
		}
		return nil
	}
	// recorded before the first try: a crash after the kernel took the
	// entry must not leave it unrecorded
	if err := m.own(h); err != nil {
		return err
	}
	var lastErr error
	for _, flags := range managedFlags {
		err := m.replace(ctx, h, flags)
		if err != nil {
			if !unsupported(err) {
				m.disown(h)
				return err // this entry's problem, not the kernel's
			}
			lastErr = err
			continue
		}
		// Some kernels before 5.16 ignore the flag they do not know: the
		// entry is there, but not managed.
		e, ok, err := m.show(ctx, h)
		if err != nil {
			m.disown(h)
			return err
		}
		if ok && !e.Managed {
			if err := m.del(ctx, h); err != nil {
				m.log.Warn("neighbours: remove the unmanaged test entry", "err", err)
			}
			lastErr = fmt.Errorf("add neighbour %s: the kernel dropped the managed flag", h)
			break
		}
		m.mode, m.flags = modeManaged, flags
		m.log.Info("neighbours: next hops kept resolved by managed neighbour entries", "flags", flags)
		return nil
	}
	m.disown(h)
	m.mode = modeFallback
	m.log.Info("neighbours: this kernel has no managed neighbour entries (Linux 5.16+); resolving next hops with UDP probes instead",
		"err", lastErr)
	return m.probeHop(h)
}

// serve handles one on-demand request: the hop is kept while requested
// and resolved now if it has no managed entry.
func (m *Manager) serve(ctx context.Context, k reqKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	dev, err := m.devName(ctx, k.ifindex)
	if err != nil {
		m.log.Debug("neighbours: request", "ifindex", k.ifindex, "addr", k.addr, "err", err)
		return
	}
	if dev == "lo" {
		return
	}
	h := Hop{Dev: dev, Addr: k.addr}
	now := m.now()
	if _, ok := m.requested[h]; !ok && len(m.requested) >= m.max {
		if now.Sub(m.fullAt) >= time.Minute {
			m.fullAt = now
			m.log.Warn("neighbours: too many next hops requested; not resolving more until some expire",
				"max", m.max, "expiry", m.expiry)
		}
		return
	}
	m.requested[h] = now
	if m.mode == modeFallback {
		m.logRequest(h, m.probeHop(h))
		return
	}
	e, ok, err := m.show(ctx, h)
	if err == nil {
		err = m.ensure(ctx, h, e, ok)
	}
	m.logRequest(h, err)
}

func (m *Manager) logRequest(h Hop, err error) {
	if err != nil {
		m.log.Debug("neighbours: request", "hop", h.String(), "err", err)
	}
}

// devName returns the name of interface ifindex, reading the interfaces
// again on a miss (at most once a second).
func (m *Manager) devName(ctx context.Context, ifindex int) (string, error) {
	if name, ok := m.names[ifindex]; ok {
		return name, nil
	}
	if now := m.now(); m.names == nil || now.Sub(m.namesAt) >= time.Second {
		names, err := m.links(ctx)
		if err != nil {
			return "", err
		}
		m.names, m.namesAt = names, now
	}
	if name, ok := m.names[ifindex]; ok {
		return name, nil
	}
	return "", fmt.Errorf("no interface of index %d", ifindex)
}

// probeHop makes the kernel resolve h by sending to it (the fallback).
func (m *Manager) probeHop(h Hop) error {
	if err := m.probe(h.Dev, h.Addr); err != nil {
		return fmt.Errorf("probe neighbour %s: %w", h, err)
	}
	return nil
}

// own counts h as an entry the Manager added, recording it first (see
// Options.Record). m.mu is held.
func (m *Manager) own(h Hop) error {
	if m.added[h] {
		return nil
	}
	if m.rec != nil {
		if err := m.rec.Record(h); err != nil {
			return fmt.Errorf("record neighbour %s: %w", h, err)
		}
	}
	m.added[h] = true
	return nil
}

// disown stops counting h as added (it is deleted, or someone else's);
// m.mu is held.
func (m *Manager) disown(h Hop) {
	if !m.added[h] {
		return
	}
	delete(m.added, h)
	if m.rec != nil {
		if err := m.rec.Forget(h); err != nil {
			m.log.Warn("neighbours: forget a removed entry", "hop", h, "err", err)
		}
	}
}
