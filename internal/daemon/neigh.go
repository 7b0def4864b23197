// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
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
// data path forwards to resolved (XDP cannot resolve them), and the
// goroutines that run it.
type neighbours struct {
	mgr    *neigh.Manager
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startNeighbours runs after the data path is attached to ifaces: it
// starts the manager (which logs once whether it uses managed neighbour
// entries or the fallback) and feeds it the data path's requests for next
// hops it dropped packets for. stopNeighbours ends both.
func (d *Daemon) startNeighbours(ifaces []string) {
	mgr := neigh.New(neigh.Options{Logger: d.log, Interfaces: ifaces,
		Record: neighRecord{d.record}, Adopt: recordedHops(d.record)})
	ctx, cancel := context.WithCancel(context.Background())
	d.neigh.mgr, d.neigh.cancel = mgr, cancel
	d.neigh.wg.Add(2)
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
}

// syncNeighbours gives the manager the reals of want, after every
// successful apply. An error is logged, never fatal: a real may be
// unreachable for a while, and the manager tries again every period.
func (d *Daemon) syncNeighbours(want *config.Desired) {
	if d.neigh.mgr == nil {
		return
	}
	if err := d.neigh.mgr.Sync(realAddrs(want)); err != nil {
		d.log.Warn("neighbours: some next hops are not resolved yet", "err", err)
	}
}

// resolveWait bounds how long an apply waits for the next hops of new
// reals to resolve before it puts them into service.
const resolveWait = time.Second

// prepareNeighbours resolves the next hops of the reals next adds to cur
// before the data path may schedule them (make before break): the manager
// keeps the union of both until syncNeighbours(next) after the apply.
// Waiting is bounded; a real still unresolved is logged, and its first
// packets may be dropped as no_neigh (each asks for it again).
func (d *Daemon) prepareNeighbours(cur, next *config.Desired) {
	if d.neigh.mgr == nil || next == nil {
		return
	}
	had := realAddrs(cur)
	var added []netip.Addr
	for _, a := range realAddrs(next) {
		if !slices.Contains(had, a) {
			added = append(added, a)
		}
	}
	if len(added) == 0 {
		return
	}
	if err := d.neigh.mgr.Sync(append(had, added...)); err != nil {
		d.log.Warn("neighbours: some next hops are not resolved yet", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveWait)
	defer cancel()
	if left := d.neigh.mgr.WaitResolved(ctx, added); len(left) > 0 {
		d.log.Info("neighbours: next hops of new reals not resolved yet; their first packets may be dropped (no_neigh)", "hops", left)
	}
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
