// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
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
	mgr := neigh.New(neigh.Options{Logger: d.log, Interfaces: ifaces})
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

// realAddrs lists the addresses of every real of want, once each, sorted.
// Drained reals (weight 0) are in: their connections still go to them.
func realAddrs(want *config.Desired) []netip.Addr {
	var addrs []netip.Addr
	for _, reals := range want.Reals {
		for _, r := range reals {
			addrs = append(addrs, r.Addr)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs)
}
