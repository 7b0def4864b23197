// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/ctsync"
)

// startSync starts the connection sync of a cluster section, if any: the
// other nodes' local IPs become the data path's to answer for (their
// replies reach this node only once it announces them, when their node
// is gone), the data path reports new connections, and the syncer
// streams them to the peers and installs theirs, until ctx ends.
func (d *Daemon) startSync(ctx context.Context, loops *sync.WaitGroup, want *config.Desired) error {
	c := want.Cluster
	if c == nil {
		return nil
	}
	if err := d.dp.SetPeerLocalIPs(c.PeerLocalIPs()); err != nil {
		return err
	}
	var peers []ctsync.Peer
	for _, p := range c.Peers {
		peers = append(peers, ctsync.Peer{ID: p.ID, Name: p.Name, Addr: c.SyncAddr(p)})
	}
	s := ctsync.New(ctsync.Config{NodeID: c.Self.ID, Name: c.Self.Name, Listen: c.SyncAddr(c.Self), Peers: peers,
		Refresh: c.SyncRefresh}, d.dp, d.dp, d.log)
	d.node.mu.Lock()
	d.node.sync = s // Node reads it under the lock
	d.node.mu.Unlock()
	loops.Go(func() {
		if err := s.Run(ctx); err != nil {
			d.log.Error("connection sync stopped", "err", err)
		}
	})
	loops.Go(func() {
		if err := d.dp.WatchSyncEvents(ctx, s.Note); err != nil {
			d.log.Error("connection sync: the data path's events", "err", err)
		}
	})
	if err := d.dp.SetSync(true); err != nil {
		return err
	}
	d.log.Info("connection sync started", "node", c.Self.Name, "id", c.Self.ID, "listen", c.SyncAddr(c.Self), "peers", len(peers))
	return nil
}

// syncStatus is the sync with every peer, for the API.
func (d *Daemon) syncStatus() []api.SyncPeer {
	if d.node.sync == nil {
		return nil
	}
	var out []api.SyncPeer
	for _, p := range d.node.sync.Status() {
		in := p.In.Installs
		out = append(out, api.SyncPeer{Name: p.Name, ID: p.ID, Address: p.Addr.String(),
			OutConnected: p.Out.Connected, Sent: p.Out.Sent, Dropped: p.Out.Dropped, Queued: p.Out.Queued, Resyncs: p.Out.Resyncs,
			InConnected: p.In.Connected, Resynced: p.In.Resynced, Received: p.In.Received,
			Installed: in.Installed, Refreshed: in.Refreshed, Own: in.Own, Stale: in.Stale, NoService: in.NoService, NoReal: in.NoReal, Full: in.Full,
			LastError: p.Out.LastError})
	}
	return out
}

// syncReady reports whether the peers' connections are in (or there is
// no sync): until then the VIPs wait, so that the flows the routers move
// here find their connections. A daemon that took over a forwarding data
// path has them in its tables already and does not wait.
func (d *Daemon) syncReady() bool { return d.node.sync == nil || d.tookOver || d.node.sync.Ready() }

// checkClusterChange refuses, before anything changes, a change of the
// cluster section: it takes a restart.
func checkClusterChange(cur, want *config.Desired) error {
	if !reflect.DeepEqual(cur.Cluster, want.Cluster) {
		return errors.New("cluster: a change of the cluster section takes a daemon restart; nothing applied")
	}
	return nil
}
