// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// fakeCounters serves fixed counters, or fails.
type fakeCounters struct{ fail bool }

func (f fakeCounters) Status() ([]loadbalancer.ServiceStatus, error) {
	if f.fail {
		return nil, errors.New("map read failed")
	}
	key := loadbalancer.ServiceKey{VIP: netip.MustParseAddr("192.0.2.10"), Port: 80, Proto: loadbalancer.TCP}
	return []loadbalancer.ServiceStatus{{
		Service: loadbalancer.Service{Key: key},
		Stats:   loadbalancer.Counters{Conns: 7, InPackets: 100, OutPackets: 90, InBytes: 6400, OutBytes: 128000},
		Reals: []loadbalancer.RealStatus{{
			Real:        loadbalancer.Real{Addr: netip.MustParseAddr("198.51.100.1"), Port: 8080, Weight: 2},
			Stats:       loadbalancer.Counters{Conns: 7, InPackets: 100},
			ActiveConns: 3, InactiveConns: 4,
		}},
	}}, nil
}

func (f fakeCounters) Stats() (api.Stats, error) {
	return api.Stats{Drops: map[string]uint64{"ip_truncated": 2}, Verdicts: map[string]uint64{"tx": 190}}, nil
}

// Node is a drained node with a peer up and one down and a VIP withdrawn.
func (f fakeCounters) Node() api.NodeStatus {
	return api.NodeStatus{Name: "n1", Drained: true, BGP: &api.BGPStatus{ASN: 65001,
		Peers: []api.BGPPeer{
			{Address: netip.MustParseAddr("10.99.1.1"), ASN: 65000, State: "established", Advertised: 1},
			{Address: netip.MustParseAddr("10.99.2.1"), ASN: 65000, State: "active"},
		},
		Routes: []api.RouteStatus{
			{Prefix: netip.MustParsePrefix("10.100.2.11/32"), Kind: api.RouteLocalIP, Announced: true},
			{Prefix: netip.MustParsePrefix("192.0.2.10/32"), Kind: api.RouteVIP, Reason: api.WithdrawnDrained},
		}}}
}

func TestNodeMetrics(t *testing.T) {
	const want = `
# HELP xlb_bgp_peer_advertised_routes Routes the peer holds from the node.
# TYPE xlb_bgp_peer_advertised_routes gauge
xlb_bgp_peer_advertised_routes{peer="10.99.1.1",peer_asn="65000"} 1
xlb_bgp_peer_advertised_routes{peer="10.99.2.1",peer_asn="65000"} 0
# HELP xlb_bgp_peer_up 1 when the BGP session to the peer is established.
# TYPE xlb_bgp_peer_up gauge
xlb_bgp_peer_up{peer="10.99.1.1",peer_asn="65000"} 1
xlb_bgp_peer_up{peer="10.99.2.1",peer_asn="65000"} 0
# HELP xlb_bgp_route_announced 1 when the node announces the route (a VIP while a real of its services takes connections and the node is not drained; a local IP always).
# TYPE xlb_bgp_route_announced gauge
xlb_bgp_route_announced{kind="local_ip",prefix="10.100.2.11/32"} 1
xlb_bgp_route_announced{kind="vip",prefix="192.0.2.10/32"} 0
# HELP xlb_node_drained 1 while the node is drained (xlb node drain): its VIPs are withdrawn.
# TYPE xlb_node_drained gauge
xlb_node_drained 1
`
	names := []string{"xlb_bgp_peer_advertised_routes", "xlb_bgp_peer_up", "xlb_bgp_route_announced", "xlb_node_drained"}
	if err := testutil.CollectAndCompare(newCollector(fakeCounters{}), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

func TestMetrics(t *testing.T) {
	const want = `
# HELP xlb_drops_total Packets the data path dropped, by reason.
# TYPE xlb_drops_total counter
xlb_drops_total{reason="ip_truncated"} 2
# HELP xlb_real_active_connections Established connections of a real (ipvsadm ActiveConn).
# TYPE xlb_real_active_connections gauge
xlb_real_active_connections{port="80",protocol="tcp",real="198.51.100.1",real_port="8080",vip="192.0.2.10"} 3
# HELP xlb_real_inactive_connections Other live connections of a real (ipvsadm InActConn).
# TYPE xlb_real_inactive_connections gauge
xlb_real_inactive_connections{port="80",protocol="tcp",real="198.51.100.1",real_port="8080",vip="192.0.2.10"} 4
# HELP xlb_service_bytes_total Bytes of a service by direction.
# TYPE xlb_service_bytes_total counter
xlb_service_bytes_total{direction="in",port="80",protocol="tcp",vip="192.0.2.10"} 6400
xlb_service_bytes_total{direction="out",port="80",protocol="tcp",vip="192.0.2.10"} 128000
# HELP xlb_service_connections_total Connections a service scheduled.
# TYPE xlb_service_connections_total counter
xlb_service_connections_total{port="80",protocol="tcp",vip="192.0.2.10"} 7
# HELP xlb_service_reals_taking_connections Reals of a service that take new connections: up (or unchecked), next hop resolved, weight above 0. 0: its new connections are dropped (no_real).
# TYPE xlb_service_reals_taking_connections gauge
xlb_service_reals_taking_connections{port="80",protocol="tcp",vip="192.0.2.10"} 1
# HELP xlb_up 1 when the daemon reads its data path.
# TYPE xlb_up gauge
xlb_up 1
`
	names := []string{"xlb_drops_total", "xlb_real_active_connections", "xlb_real_inactive_connections",
		"xlb_service_bytes_total", "xlb_service_connections_total", "xlb_service_reals_taking_connections", "xlb_up"}
	if err := testutil.CollectAndCompare(newCollector(fakeCounters{}), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.CollectAndLint(newCollector(fakeCounters{})); err != nil || len(n) > 0 {
		t.Fatalf("lint: %v %v", n, err)
	}
	failing := "# HELP xlb_up 1 when the daemon reads its data path.\n# TYPE xlb_up gauge\nxlb_up 0\n"
	if err := testutil.CollectAndCompare(newCollector(fakeCounters{fail: true}), strings.NewReader(failing), "xlb_up"); err != nil {
		t.Fatal(err)
	}
}
