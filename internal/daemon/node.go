// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/bgp"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/ctsync"
	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// node is the daemon as a node of a cluster: its BGP speaker, which
// announces the VIPs whose services can take connections and the local
// IPs, and its drain state.
type node struct {
	speaker *bgp.Speaker   // nil without a bgp section
	sync    *ctsync.Syncer // nil without a cluster section (cluster.go)
	kick    chan struct{}

	mu       sync.Mutex
	drained  bool
	stopping bool
	routes   []api.RouteStatus // the last decision
}

// routeRecheck is how often the routes are decided again without a
// health change or an apply: a real's next hop that resolves or fails
// is seen this late.
const routeRecheck = 2 * time.Second

// startSpeaker starts the BGP speaker of the node section, if any,
// announcing nothing yet. A daemon that took over a forwarding data path
// restarts gracefully: the routers keep its routes meanwhile.
func (d *Daemon) startSpeaker(want *config.Desired) error {
	if want.Node.BGP == nil {
		return nil
	}
	// a drain outlives a hand-over or a crash, as the record does
	if d.record != nil && len(d.record.List(hoststate.NodeDrained)) > 0 {
		d.node.drained = true
		d.log.Warn("the node is drained (by an earlier run): its VIPs stay withdrawn until xlb node resume")
	}
	sp, err := bgp.Start(*want.Node.BGP, bgp.Options{Restarting: d.tookOver, Log: d.log})
	if err != nil {
		return err
	}
	d.node.speaker = sp
	d.log.Info("BGP speaker started", "asn", want.Node.BGP.ASN, "router_id", want.Node.BGP.RouterID,
		"peers", len(want.Node.BGP.Peers), "graceful_restart", want.Node.BGP.RestartTime > 0, "restarting", d.tookOver)
	return nil
}

// kickRoutes asks the route loop to decide the routes again now.
func (d *Daemon) kickRoutes() {
	select {
	case d.node.kick <- struct{}{}:
	default:
	}
}

// routeLoop keeps the announcements up to date until ctx ends.
func (d *Daemon) routeLoop(ctx context.Context) {
	if d.node.speaker == nil {
		return
	}
	t := time.NewTicker(routeRecheck)
	defer t.Stop()
	for {
		d.syncRoutes()
		select {
		case <-ctx.Done():
			return
		case <-d.node.kick:
		case <-t.C:
		}
	}
}

// syncRoutes decides the routes and announces them.
func (d *Daemon) syncRoutes() {
	if d.node.speaker == nil {
		return
	}
	st, err := d.Status()
	if err != nil {
		d.log.Warn("BGP: read the services to decide the routes; announcements unchanged", "err", err)
		return
	}
	d.mu.Lock()
	cur := d.cur
	d.mu.Unlock()
	d.node.mu.Lock()
	defer d.node.mu.Unlock()
	routes := decideRoutes(st, cur, nodeState{drained: d.node.drained, stopping: d.node.stopping, syncing: !d.syncReady()})
	var announce []bgp.Route
	for _, r := range routes {
		switch {
		case !r.Announced:
		case r.Kind == api.RoutePeerLocalIP:
			announce = append(announce, bgp.Route{Prefix: r.Prefix, Communities: cur.Node.BGP.Communities, Prepend: backupPrepend})
		case r.Kind == api.RouteLocalIP:
			announce = append(announce, bgp.Route{Prefix: r.Prefix, Communities: cur.Node.BGP.Communities})
		default:
			announce = append(announce, bgp.Route{Prefix: r.Prefix, Communities: cur.Communities[r.Prefix.Addr()]})
		}
	}
	if err := d.node.speaker.Announce(announce); err != nil {
		d.log.Warn("BGP: announce", "err", err)
		return
	}
	for _, r := range routes {
		if r.Kind != api.RouteVIP {
			continue
		}
		i := slices.IndexFunc(d.node.routes, func(o api.RouteStatus) bool { return o.Prefix == r.Prefix })
		if i < 0 || d.node.routes[i].Announced != r.Announced {
			if r.Announced {
				d.log.Info("BGP: VIP announced", "vip", r.Prefix.Addr())
			} else {
				d.log.Warn("BGP: VIP withdrawn", "vip", r.Prefix.Addr(), "reason", r.Reason)
			}
		}
	}
	d.node.routes = routes
}

// backupPrepend is how many more times a node puts its AS number in the
// path of another node's local IP: routers prefer that node's own route.
const backupPrepend = 3

// nodeState is what, besides the services, decides the routes.
type nodeState struct {
	drained, stopping bool
	// syncing: the peers' connections are not all in yet.
	syncing bool
}

// decideRoutes says, for every VIP and local IP of cur, whether it is
// announced: a VIP while a service of it has a real taking connections,
// the node is neither drained nor stopping and, in a cluster, the peers'
// connections are in; a local IP always (the replies of the connections
// this node opened come back to it), and the other nodes' as backups.
func decideRoutes(st []loadbalancer.ServiceStatus, cur *config.Desired, ns nodeState) []api.RouteStatus {
	taking := map[netip.Addr]bool{}
	for _, s := range st {
		for _, r := range s.Reals {
			if r.TakesConnections() {
				taking[s.Key.VIP] = true
			}
		}
	}
	var vips, laddrs []netip.Addr
	for _, s := range cur.Services {
		if !slices.Contains(vips, s.Key.VIP) {
			vips = append(vips, s.Key.VIP)
		}
		for _, l := range s.LocalIPs {
			if !slices.Contains(laddrs, l) {
				laddrs = append(laddrs, l)
			}
		}
	}
	for _, l := range cur.Node.LocalIPs {
		if !slices.Contains(laddrs, l) {
			laddrs = append(laddrs, l)
		}
	}
	var out []api.RouteStatus
	for _, v := range vips {
		r := api.RouteStatus{Prefix: netip.PrefixFrom(v, v.BitLen()), Kind: api.RouteVIP, Communities: communityNames(cur.Communities[v])}
		switch {
		case ns.stopping:
			r.Reason = api.WithdrawnStopping
		case ns.drained:
			r.Reason = api.WithdrawnDrained
		case !taking[v]:
			r.Reason = api.WithdrawnNoReal
		case ns.syncing:
			r.Reason = api.WithdrawnSync
		default:
			r.Announced = true
		}
		out = append(out, r)
	}
	for _, l := range laddrs {
		out = append(out, api.RouteStatus{Prefix: netip.PrefixFrom(l, l.BitLen()), Kind: api.RouteLocalIP, Announced: true})
	}
	if cur.Cluster != nil {
		for _, l := range cur.Cluster.PeerLocalIPs() {
			out = append(out, api.RouteStatus{Prefix: netip.PrefixFrom(l, l.BitLen()), Kind: api.RoutePeerLocalIP, Announced: !ns.stopping})
		}
	}
	slices.SortStableFunc(out, func(a, b api.RouteStatus) int { return a.Prefix.Addr().Compare(b.Prefix.Addr()) })
	return out
}

// communityNames writes communities as ASN:VALUE.
func communityNames(cs []uint32) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%d:%d", c>>16, c&0xffff))
	}
	return out
}

// Node implements api.Backend.
func (d *Daemon) Node() api.NodeStatus {
	d.mu.Lock()
	settings := d.cur.Node
	d.mu.Unlock()
	d.node.mu.Lock()
	defer d.node.mu.Unlock()
	st := api.NodeStatus{Name: settings.Name, Drained: d.node.drained, Stopping: d.node.stopping, Sync: d.syncStatus()}
	if st.Name == "" {
		st.Name, _ = os.Hostname()
	}
	if d.node.speaker == nil || settings.BGP == nil {
		return st
	}
	st.BGP = &api.BGPStatus{ASN: settings.BGP.ASN, RouterID: settings.BGP.RouterID,
		Peers: []api.BGPPeer{}, Routes: slices.Clone(d.node.routes)}
	for _, p := range d.node.speaker.Peers() {
		st.BGP.Peers = append(st.BGP.Peers, api.BGPPeer{Address: p.Address, ASN: p.ASN, State: p.State, Since: p.Since,
			Advertised: p.Advertised, LastError: p.LastError, GracefulRestart: p.GracefulRestart})
	}
	return st
}

// Drain implements api.Backend.
func (d *Daemon) Drain(drained bool) error {
	if d.node.speaker == nil {
		return api.ErrNoSpeaker
	}
	d.node.mu.Lock()
	changed := d.node.drained != drained
	if changed && d.record != nil {
		record := d.record.Remove
		if drained {
			record = d.record.Add
		}
		if err := record(hoststate.Drained); err != nil {
			d.node.mu.Unlock()
			return fmt.Errorf("drain: %w", err)
		}
	}
	d.node.drained = drained
	d.node.mu.Unlock()
	if changed {
		if drained {
			d.log.Warn("node drained: withdrawing its VIPs; established connections keep being forwarded")
		} else {
			d.log.Info("node resumed: announcing its VIPs again")
		}
	}
	d.syncRoutes()
	return nil
}

// checkNodeChange refuses, before anything changes, a change of the
// speaker that takes a restart: all but its peers and communities.
func checkNodeChange(cur, want *config.Desired) error {
	a, b := cur.Node.BGP, want.Node.BGP
	if a == nil && b == nil {
		return nil
	}
	if a == nil || b == nil {
		return errors.New("node.bgp: adding or removing the BGP speaker takes a daemon restart; nothing applied")
	}
	x, y := *a, *b
	x.Peers, y.Peers, x.Communities, y.Communities = nil, nil, nil, nil
	if !reflect.DeepEqual(x, y) {
		return errors.New("node.bgp: only its peers and communities change without a restart (asn, router_id, listen_port, " +
			"next hops and graceful_restart take a daemon restart); nothing applied")
	}
	return nil
}

// applyNode moves the speaker's peers to want's; d.mu is held.
func (d *Daemon) applyNode(want *config.Desired) {
	if d.node.speaker == nil {
		return
	}
	if !slices.Equal(d.cur.Node.BGP.Peers, want.Node.BGP.Peers) {
		if err := d.node.speaker.SetPeers(want.Node.BGP.Peers); err != nil {
			d.log.Warn("BGP: change the peers", "err", err)
		}
	}
}

// withdrawToStop withdraws the VIPs of a stopping daemon and keeps
// forwarding for the shutdown grace, then stops the speaker, which
// withdraws the local IPs too.
func (d *Daemon) withdrawToStop() {
	if d.node.speaker == nil {
		return
	}
	d.mu.Lock()
	grace := d.cur.Node.ShutdownGrace
	d.mu.Unlock()
	d.node.mu.Lock()
	d.node.stopping = true
	d.node.mu.Unlock()
	d.syncRoutes()
	if grace > 0 {
		d.log.Info("VIPs withdrawn; forwarding for the shutdown grace (a second SIGINT or SIGTERM ends it)", "grace", grace)
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		select {
		case <-time.After(grace):
		case <-again:
			d.log.Warn("shutdown grace cut short by a second signal")
		}
		signal.Stop(again)
	}
	d.node.speaker.Stop()
}
