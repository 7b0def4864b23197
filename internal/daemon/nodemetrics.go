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
	}
}

func (m nodeMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.drained, m.peerUp, m.peerRoutes, m.routeAnnounced} {
		ch <- d
	}
}

func (m nodeMetrics) collect(ch chan<- prometheus.Metric, n api.NodeStatus) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	one := map[bool]float64{true: 1}
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
