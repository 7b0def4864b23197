// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"
)

// NodeStatus is GET /v1/node: the node's name, whether it is drained, and
// its BGP speaker (xlb node).
type NodeStatus struct {
	Name string `json:"name"`
	// Drained: xlb node drain withdrew the VIPs; the node keeps
	// forwarding the connections routers still send it.
	Drained bool `json:"drained"`
	// Stopping: the daemon withdrew the VIPs to stop and is in its
	// shutdown grace.
	Stopping bool `json:"stopping,omitempty"`
	// BGP is nil without a bgp section.
	BGP *BGPStatus `json:"bgp,omitempty"`
	// Sync are the other nodes of the cluster and the connections
	// synced with each, both ways (nil without a cluster section).
	Sync []SyncPeer `json:"sync,omitempty"`
}

// SyncPeer is another node of the cluster and the connection sync with
// it: what this node sent it (out) and installed from it (in).
type SyncPeer struct {
	Name    string `json:"name"`
	ID      uint16 `json:"id"`
	Address string `json:"address"`
	// OutConnected: this node's sender is connected to the peer.
	OutConnected bool `json:"out_connected"`
	// Sent counts the connections sent (resyncs, events, refreshes);
	// Dropped the events lost to a full queue (sync lagging).
	Sent    uint64 `json:"sent"`
	Dropped uint64 `json:"dropped"`
	Queued  int    `json:"queued"`
	Resyncs uint64 `json:"resyncs"`
	// InConnected: the peer's sender is connected here; Resynced: its
	// full resync is in.
	InConnected bool   `json:"in_connected"`
	Resynced    bool   `json:"resynced"`
	Received    uint64 `json:"received"`
	// Installed, Refreshed, Own, Stale, NoService, NoReal and Full count
	// what became of the connections received.
	Installed uint64 `json:"installed"`
	Refreshed uint64 `json:"refreshed"`
	Own       uint64 `json:"own"`
	Stale     uint64 `json:"stale"`
	NoService uint64 `json:"no_service"`
	NoReal    uint64 `json:"no_real"`
	Full      uint64 `json:"full"`
	LastError string `json:"last_error,omitempty"`
}

// BGPStatus is the node's BGP speaker: its peers and what it announces.
type BGPStatus struct {
	ASN      uint32     `json:"asn"`
	RouterID netip.Addr `json:"router_id"`
	Peers    []BGPPeer  `json:"peers"`
	// Routes are every VIP and local IP of the configuration, announced
	// or not (and why not).
	Routes []RouteStatus `json:"routes"`
}

// BGPPeer is a peer and its session.
type BGPPeer struct {
	Address netip.Addr `json:"address"`
	ASN     uint32     `json:"asn"`
	// State is idle, connect, active, opensent, openconfirm or
	// established.
	State string `json:"state"`
	// Since is when the session came up or went down.
	Since time.Time `json:"since,omitzero"`
	// Advertised counts the routes the peer holds from the node.
	Advertised uint64 `json:"advertised"`
	// LastError is why the session last went down.
	LastError       string `json:"last_error,omitempty"`
	GracefulRestart bool   `json:"graceful_restart"`
}

// Kinds of announced route.
const (
	RouteVIP     = "vip"
	RouteLocalIP = "local_ip"
	// RoutePeerLocalIP is another node's local IP, announced as a backup
	// (a longer AS path): routers use it when that node's own route is
	// gone, and its synced connections' replies then come here.
	RoutePeerLocalIP = "peer_local_ip"
)

// RouteStatus is a host route of the node.
type RouteStatus struct {
	Prefix netip.Prefix `json:"prefix"`
	// Kind is vip, local_ip or peer_local_ip.
	Kind      string `json:"kind"`
	Announced bool   `json:"announced"`
	// Reason says why a route is withdrawn.
	Reason      string   `json:"reason,omitempty"`
	Communities []string `json:"communities,omitempty"`
}

// Reasons a VIP is withdrawn.
const (
	WithdrawnNoReal   = "no real of its services takes connections"
	WithdrawnDrained  = "the node is drained (xlb node drain)"
	WithdrawnStopping = "the daemon is stopping"
	WithdrawnSync     = "waiting for the other nodes' connections (sync)"
)

// ErrNoSpeaker is the error of a drain on a node without a bgp section:
// nothing announces its VIPs, so there is nothing to withdraw.
var ErrNoSpeaker = errors.New("the node has no BGP speaker (no node.bgp section): nothing announces its VIPs, so nothing can withdraw them")

// DrainRequest is the body of POST /v1/node/drain.
type DrainRequest struct {
	// Drained is true to drain, false to take traffic again.
	Drained bool `json:"drained"`
}

func (s *server) getNode(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.b.Node())
}

func (s *server) drainNode(w http.ResponseWriter, r *http.Request) {
	var req DrainRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.b.Drain(req.Drained); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.b.Node())
}

// Node returns the node's status.
func (c *Client) Node(ctx context.Context) (NodeStatus, error) {
	var st NodeStatus
	return st, c.send(ctx, http.MethodGet, "/v1/node", nil, &st)
}

// Drain drains the node (withdraws its VIPs) or, with false, undoes it.
func (c *Client) Drain(ctx context.Context, drained bool) (NodeStatus, error) {
	var st NodeStatus
	return st, c.send(ctx, http.MethodPost, "/v1/node/drain", DrainRequest{Drained: drained}, &st)
}

// nodeWarnings are what status says of the node: peers down, VIPs
// withdrawn.
func nodeWarnings(n *NodeStatus) []string {
	if n == nil {
		return nil
	}
	out := syncWarnings(n.Sync)
	if n.BGP == nil {
		return out
	}
	if n.Drained {
		out = append(out, "the node is drained: its VIPs are withdrawn (xlb node resume takes traffic again)")
	}
	for _, p := range n.BGP.Peers {
		if p.State != "established" {
			msg := fmt.Sprintf("BGP peer %s (AS %d) is %s", p.Address, p.ASN, p.State)
			if p.LastError != "" {
				msg += ": " + p.LastError
			}
			out = append(out, msg)
		}
	}
	for _, r := range n.BGP.Routes {
		if !r.Announced && r.Kind == RouteVIP && !n.Drained && !n.Stopping {
			out = append(out, fmt.Sprintf("VIP %s is withdrawn: %s", r.Prefix.Addr(), r.Reason))
		}
	}
	return out
}

// syncWarnings are what status says of the connection sync.
func syncWarnings(peers []SyncPeer) []string {
	var out []string
	for _, p := range peers {
		if !p.OutConnected {
			msg := fmt.Sprintf("connection sync to node %s (%s) is down: its flows that move here break", p.Name, p.Address)
			if p.LastError != "" {
				msg += ": " + p.LastError
			}
			out = append(out, msg)
		}
		if p.Dropped > 0 {
			out = append(out, fmt.Sprintf("connection sync to node %s lagged: %d connections dropped from its queue", p.Name, p.Dropped))
		}
	}
	return out
}
