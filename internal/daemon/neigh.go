// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/neigh"
)

// neighbours is the daemon's neigh.Manager, which keeps the next hops the
// data path forwards to resolved (XDP cannot resolve them), the goroutines
// that run it, and the reals' next-hop states: a real whose next hop is
// not resolved is kept out of scheduling ("unresolved") until it is, and
// no apply waits for one.
type neighbours struct {
	mgr    *neigh.Manager
	lookup *neigh.Lookup // nil when netlink is unavailable: no real is held back
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	reasons map[netip.Addr]string // unresolved real addresses and why
	gen     uint64                // bumped by every apply's check
}

// startNeighbours runs after the data path is attached to ifaces: it
// starts the manager (which logs once whether it uses managed neighbour
// entries or the fallback) and feeds it the data path's requests for next
// hops it dropped packets for. stopNeighbours ends both.
func (d *Daemon) startNeighbours(ifaces []string) {
	lookup, err := neigh.NewLookup("")
	if err != nil {
		d.log.Warn("neighbours: next hops cannot be looked up; reals go into service without waiting for them", "err", err)
		lookup = nil
	}
	mgr := neigh.New(neigh.Options{Logger: d.log, Interfaces: ifaces, Lookup: lookup,
		Record: neighRecord{d.record}, Adopt: recordedHops(d.record)})
	ctx, cancel := context.WithCancel(context.Background())
	d.neigh.mgr, d.neigh.lookup, d.neigh.cancel = mgr, lookup, cancel
	d.neigh.wg.Add(3)
	go func() {
		defer d.neigh.wg.Done()
		mgr.Run(ctx)
	}()
	go func() {
		defer d.neigh.wg.Done()
		err := d.dp.WatchNeighRequests(ctx, func(r datapath.NeighRequest) { mgr.Request(r.Ifindex, r.Addr) })
		if err != nil {
			d.log.Warn("neighbours: data path requests unavailable; only reals' next hops and gateways are kept resolved", "err", err)
		}
	}()
	go func() {
		defer d.neigh.wg.Done()
		d.nextHopLoop(ctx)
	}()
}

// syncNeighbours gives the manager the reals of want, without waiting:
// it resolves them in the background (nextHopLoop puts each real into
// service once its next hop is resolved).
func (d *Daemon) syncNeighbours(want *config.Desired) {
	if d.neigh.mgr != nil {
		d.neigh.mgr.Want(realAddrs(want))
	}
}

// resolveWait bounds how long the daemon's start waits for the next hops
// of its reals, so that its first connections find them. An apply never
// waits: its reals with unresolved next hops go in unresolved.
const resolveWait = time.Second

// awaitNeighbours is the start's wait: it has the manager resolve the
// next hops of want's reals and waits, at most resolveWait, until they
// are resolved.
func (d *Daemon) awaitNeighbours(want *config.Desired) {
	if d.neigh.mgr == nil || d.neigh.lookup == nil {
		return
	}
	addrs := realAddrs(want)
	if len(addrs) == 0 {
		return
	}
	if err := d.neigh.mgr.Sync(addrs); err != nil {
		d.log.Warn("neighbours: some next hops are not resolved yet", "err", err)
	}
	deadline := time.Now().Add(resolveWait)
	for time.Now().Before(deadline) {
		if len(unresolvedOf(d.neigh.lookup.NextHops(addrs))) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkNextHops looks up the next hop of every real of want, without
// waiting, and tells the data path which are unresolved before the apply
// moves it: a new real whose next hop is unresolved goes in out of
// scheduling. It returns a warning for each such address. d.mu is held.
func (d *Daemon) checkNextHops(want *config.Desired) []string {
	if d.neigh.lookup == nil {
		return nil
	}
	reasons := unresolvedOf(d.neigh.lookup.NextHops(realAddrs(want)))
	d.neigh.mu.Lock()
	d.neigh.gen++
	for a, why := range reasons {
		if _, was := d.neigh.reasons[a]; !was {
			d.log.Warn("real next hop unresolved: no new connections until it resolves", "real", a.String(), "reason", why)
		}
	}
	d.neigh.reasons = reasons
	d.neigh.mu.Unlock()
	if err := d.dp.SetUnresolved(addrSet(reasons)); err != nil {
		d.log.Warn("neighbours: mark reals unresolved", "err", err)
	}
	// one warning per address, however many services have a real there
	first := map[netip.Addr]string{}
	count := map[netip.Addr]int{}
	var order []netip.Addr
	for _, svc := range want.Services {
		for _, r := range want.Reals[svc.Key] {
			if _, ok := reasons[r.Addr]; !ok {
				continue
			}
			if count[r.Addr] == 0 {
				first[r.Addr] = fmt.Sprintf("real %s of %s", r.AddrPort(), svc.Key)
				order = append(order, r.Addr)
			}
			count[r.Addr]++
		}
	}
	var warnings []string
	for _, a := range order {
		what := first[a]
		if n := count[a]; n > 1 {
			what = fmt.Sprintf("%s (and %d more reals at %s)", what, n-1, a)
		}
		warnings = append(warnings, fmt.Sprintf("%s unresolved: %s; no new connections go to it until it resolves", what, reasons[a]))
	}
	return warnings
}

// The periods of nextHopLoop.
const (
	unresolvedPoll = 50 * time.Millisecond // while a real is unresolved
	nextHopRecheck = time.Second           // every real, for changes
)

// nextHopLoop puts unresolved reals into service as soon as their next
// hop resolves (looking again every unresolvedPoll), and takes out of
// scheduling every nextHopRecheck a real whose next hop failed (its
// packets would be dropped as no_neigh), until ctx ends.
func (d *Daemon) nextHopLoop(ctx context.Context) {
	if d.neigh.lookup == nil {
		return
	}
	var lastFull time.Time
	for {
		d.neigh.mu.Lock()
		pending := len(d.neigh.reasons) > 0
		d.neigh.mu.Unlock()
		wait := nextHopRecheck
		if pending {
			wait = unresolvedPoll
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		full := time.Since(lastFull) >= nextHopRecheck
		if full {
			lastFull = time.Now()
		}
		d.recheckNextHops(full)
	}
}

// recheckNextHops looks again at the unresolved reals' next hops (every
// real's when full) and updates the data path where a state changed.
// The lookup runs without d.mu; an apply in the meantime wins.
func (d *Daemon) recheckNextHops(full bool) {
	d.neigh.mu.Lock()
	gen, prev := d.neigh.gen, maps.Clone(d.neigh.reasons)
	d.neigh.mu.Unlock()
	var addrs []netip.Addr
	if full {
		d.mu.Lock()
		addrs = realAddrs(d.cur)
		d.mu.Unlock()
	} else {
		addrs = slices.Collect(maps.Keys(prev))
	}
	if len(addrs) == 0 {
		return
	}
	found := d.neigh.lookup.NextHops(addrs)
	next := maps.Clone(prev)
	if next == nil {
		next = map[netip.Addr]string{}
	}
	for a, nh := range found {
		_, was := prev[a]
		switch {
		case nh.Resolved && was:
			delete(next, a)
			d.log.Info("real next hop resolved: back in scheduling", "real", a.String(), "next_hop", nh.Hop.String())
		case !nh.Resolved && !was:
			next[a] = nh.Reason
			d.log.Warn("real next hop unresolved: no new connections until it resolves", "real", a.String(), "reason", nh.Reason)
		case !nh.Resolved:
			next[a] = nh.Reason
		}
	}
	if len(next) > 0 {
		d.neigh.mgr.Kick() // re-add or probe what is missing (at most once a second)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.neigh.mu.Lock()
	stale := d.neigh.gen != gen
	if !stale {
		d.neigh.reasons = next
	}
	d.neigh.mu.Unlock()
	if stale || maps.Equal(addrSet(prev), addrSet(next)) {
		return
	}
	if err := d.dp.SetUnresolved(addrSet(next)); err != nil {
		d.log.Warn("neighbours: update unresolved reals", "err", err)
	}
}

// nextHopReasons returns why each unresolved real address is unresolved.
func (d *Daemon) nextHopReasons() map[netip.Addr]string {
	d.neigh.mu.Lock()
	defer d.neigh.mu.Unlock()
	return maps.Clone(d.neigh.reasons)
}

// unresolvedOf keeps the destinations whose next hop is unresolved, with
// the reason.
func unresolvedOf(hops map[netip.Addr]neigh.NextHop) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for a, nh := range hops {
		if !nh.Resolved {
			out[a] = nh.Reason
		}
	}
	return out
}

func addrSet(reasons map[netip.Addr]string) map[netip.Addr]bool {
	out := make(map[netip.Addr]bool, len(reasons))
	for a := range reasons {
		out[a] = true
	}
	return out
}

// stopNeighbours ends the manager's goroutines and deletes the neighbour
// entries it added.
func (d *Daemon) stopNeighbours() {
	if d.neigh.mgr == nil {
		return
	}
	d.neigh.cancel()
	d.neigh.wg.Wait()
	if err := d.neigh.mgr.Close(); err != nil {
		d.log.Warn("neighbours: remove the entries added", "err", err)
	}
}

// releaseNeighbours ends the manager's goroutines and leaves its entries
// (recorded) for the next daemon: a hand-over.
func (d *Daemon) releaseNeighbours() {
	if d.neigh.mgr == nil {
		return
	}
	d.neigh.cancel()
	d.neigh.wg.Wait()
	d.neigh.mgr.Release()
}

// neighRecord keeps the manager's entries in the host state record.
type neighRecord struct{ r *hoststate.Record }

func (n neighRecord) Record(h neigh.Hop) error {
	return n.r.Add(hoststate.Entry{Kind: hoststate.Neighbour, Dev: h.Dev, Addr: h.Addr})
}

func (n neighRecord) Forget(h neigh.Hop) error {
	return n.r.Remove(hoststate.Entry{Kind: hoststate.Neighbour, Dev: h.Dev, Addr: h.Addr})
}

// recordedHops are the neighbour entries an earlier daemon recorded.
func recordedHops(r *hoststate.Record) []neigh.Hop {
	var hops []neigh.Hop
	for _, e := range r.List(hoststate.Neighbour) {
		hops = append(hops, neigh.Hop{Addr: e.Addr, Dev: e.Dev})
	}
	return hops
}

// realAddrs lists the addresses of every real of want, once each, sorted.
// Drained reals (weight 0) are in: their connections still go to them.
func realAddrs(want *config.Desired) []netip.Addr {
	var addrs []netip.Addr
	if want == nil {
		return nil
	}
	for _, reals := range want.Reals {
		for _, r := range reals {
			addrs = append(addrs, r.Addr)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs)
}
