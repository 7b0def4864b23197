// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xlb-dev/xlb/internal/api"
)

// nodeSource is what the node's metrics read: the daemon.
type nodeSource interface {
	Node() api.NodeStatus
}

// nodeMetrics are the node's drain and its BGP speaker's peers and
// routes.
type nodeMetrics struct {
	drained, peerUp, peerRoutes, routeAnnounced *prometheus.Desc
	syncUp, syncSent, syncDropped, syncReceived *prometheus.Desc
	syncInstalls                                *prometheus.Desc
}

func newNodeMetrics() nodeMetrics {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("xlb_"+name, help, labels, nil)
	}
	return nodeMetrics{
		drained:    desc("node_drained", "1 while the node is drained (xlb node drain): its VIPs are withdrawn."),
		peerUp:     desc("bgp_peer_up", "1 when the BGP session to the peer is established.", "peer", "peer_asn"),
		peerRoutes: desc("bgp_peer_advertised_routes", "Routes the peer holds from the node.", "peer", "peer_asn"),
		routeAnnounced: desc("bgp_route_announced",
			"1 when the node announces the route (a VIP while a real of its services takes connections and the node is not drained; a local IP always).",
			"prefix", "kind"),
		syncUp: desc("sync_peer_connected", "1 while the connection sync with the peer node is connected: out (this node sends) or in (the peer sends).",
			"peer", "direction"),
		syncSent:     desc("sync_sent_total", "Connections sent to the peer node: full resyncs, events and refreshes.", "peer"),
		syncDropped:  desc("sync_dropped_total", "Connection events for the peer node lost to a full queue (sync lagging).", "peer"),
		syncReceived: desc("sync_received_total", "Connections received from the peer node.", "peer"),
		syncInstalls: desc("sync_installs_total",
			"What became of the connections received from the peer node: installed, refreshed, own (this node has its own), stale (older than the one here), no_service, no_real, full.",
			"peer", "result"),
	}
}

func (m nodeMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.drained, m.peerUp, m.peerRoutes, m.routeAnnounced, m.syncUp, m.syncSent, m.syncDropped, m.syncReceived, m.syncInstalls} {
		ch <- d
	}
}

func (m nodeMetrics) collect(ch chan<- prometheus.Metric, n api.NodeStatus) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	one := map[bool]float64{true: 1}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, p := range n.Sync {
		gauge(m.syncUp, one[p.OutConnected], p.Name, "out")
		gauge(m.syncUp, one[p.InConnected], p.Name, "in")
		counter(m.syncSent, p.Sent, p.Name)
		counter(m.syncDropped, p.Dropped, p.Name)
		counter(m.syncReceived, p.Received, p.Name)
		for result, v := range map[string]uint64{"installed": p.Installed, "refreshed": p.Refreshed, "own": p.Own, "stale": p.Stale,
			"no_service": p.NoService, "no_real": p.NoReal, "full": p.Full} {
			counter(m.syncInstalls, v, p.Name, result)
		}
	}
	if n.BGP == nil {
		return
	}
	gauge(m.drained, one[n.Drained])
	for _, p := range n.BGP.Peers {
		l := []string{p.Address.String(), strconv.FormatUint(uint64(p.ASN), 10)}
		gauge(m.peerUp, one[p.State == "established"], l...)
		gauge(m.peerRoutes, float64(p.Advertised), l...)
	}
	for _, r := range n.BGP.Routes {
		gauge(m.routeAnnounced, one[r.Announced], r.Prefix.String(), r.Kind)
	}
}
