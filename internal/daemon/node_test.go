// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/apply/applytest"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// clusterConfig is a node of a cluster: two VIPs (one with two
// services), services without local IPs of their own.
const clusterConfig = `
interfaces: [eth0]
node:
  name: n1
  local_ips: [10.100.2.11, 2001:db8:2::11]
  bgp:
    asn: 65001
    router_id: 10.99.1.2
    communities: ["65000:1"]
    peers: [{address: 10.99.1.1, asn: 65000}]
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, bgp_communities: ["65000:80"],
     reals: [{address: 10.100.3.1, port: 8080}]}
  - {vip: 192.0.2.10, port: 443, protocol: tcp, reals: [{address: 10.100.3.1, port: 8443}]}
  - {vip: 192.0.2.20, port: 80, protocol: tcp, local_ips: [10.100.2.99], reals: [{address: 10.100.3.2, port: 8080}]}
`

// statusOf is the services of d with every real taking connections
// except those named down (ADDR:PORT).
func statusOf(d *config.Desired, down ...string) []loadbalancer.ServiceStatus {
	var out []loadbalancer.ServiceStatus
	for _, s := range d.Services {
		st := loadbalancer.ServiceStatus{Service: s}
		for _, r := range d.Reals[s.Key] {
			rs := loadbalancer.RealStatus{Real: r}
			for _, x := range down {
				rs.Down = rs.Down || r.AddrPort().String() == x
			}
			st.Reals = append(st.Reals, rs)
		}
		out = append(out, st)
	}
	return out
}

func brief(routes []api.RouteStatus) string {
	var b []string
	for _, r := range routes {
		s := fmt.Sprintf("%s %s %v", r.Prefix, r.Kind, r.Announced)
		if r.Reason != "" {
			s += " (" + r.Reason + ")"
		}
		if len(r.Communities) > 0 {
			s += " " + strings.Join(r.Communities, ",")
		}
		b = append(b, s)
	}
	return strings.Join(b, "\n")
}

func TestDecideRoutes(t *testing.T) {
	d := applytest.Desired(t, clusterConfig)
	laddrs := "10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n2001:db8:2::11/128 local_ip true"
	for _, tc := range []struct {
		name              string
		down              []string
		drained, stopping bool
		want              string
	}{
		{"all up", nil, false, false,
			"10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n192.0.2.10/32 vip true 65000:1,65000:80\n" +
				"192.0.2.20/32 vip true 65000:1\n2001:db8:2::11/128 local_ip true"},
		{"one service of a VIP without reals keeps the VIP", []string{"10.100.3.1:8080"}, false, false,
			"10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n192.0.2.10/32 vip true 65000:1,65000:80\n" +
				"192.0.2.20/32 vip true 65000:1\n2001:db8:2::11/128 local_ip true"},
		{"every service of a VIP without reals withdraws it", []string{"10.100.3.1:8080", "10.100.3.1:8443"}, false, false,
			"10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n192.0.2.10/32 vip false (" + api.WithdrawnNoReal + ") 65000:1,65000:80\n" +
				"192.0.2.20/32 vip true 65000:1\n2001:db8:2::11/128 local_ip true"},
		{"drained", nil, true, false,
			"10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n192.0.2.10/32 vip false (" + api.WithdrawnDrained + ") 65000:1,65000:80\n" +
				"192.0.2.20/32 vip false (" + api.WithdrawnDrained + ") 65000:1\n2001:db8:2::11/128 local_ip true"},
		{"stopping", nil, true, true,
			"10.100.2.11/32 local_ip true\n10.100.2.99/32 local_ip true\n192.0.2.10/32 vip false (" + api.WithdrawnStopping + ") 65000:1,65000:80\n" +
				"192.0.2.20/32 vip false (" + api.WithdrawnStopping + ") 65000:1\n2001:db8:2::11/128 local_ip true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := brief(decideRoutes(statusOf(d, tc.down...), d, nodeState{drained: tc.drained, stopping: tc.stopping}))
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if !strings.Contains(got, laddrs[:30]) {
				t.Errorf("local IPs missing: %s", got)
			}
		})
	}
}

// TestNodeLocalIPs: a service without local IPs of its own takes the
// node's of its VIP's family.
func TestNodeLocalIPs(t *testing.T) {
	d := applytest.Desired(t, clusterConfig)
	got := fmt.Sprint(d.Services[0].LocalIPs, d.Services[2].LocalIPs)
	if want := "[10.100.2.11] [10.100.2.99]"; got != want {
		t.Errorf("local IPs %s, want %s", got, want)
	}
}

func TestCheckNodeChange(t *testing.T) {
	cur := applytest.Desired(t, clusterConfig)
	for _, tc := range []struct {
		name, from, to, wantErr string
	}{
		{"a peer added", "peers: [{address: 10.99.1.1, asn: 65000}]", "peers: [{address: 10.99.1.1, asn: 65000}, {address: 10.99.2.1, asn: 65000}]", ""},
		{"communities", `communities: ["65000:1"]`, `communities: ["65000:2"]`, ""},
		{"the ASN", "asn: 65001", "asn: 65002", "take a daemon restart"},
		{"the router id", "router_id: 10.99.1.2", "router_id: 10.99.1.3", "take a daemon restart"},
		{"the speaker removed", "  bgp:\n    asn: 65001\n    router_id: 10.99.1.2\n    communities: [\"65000:1\"]\n    peers: [{address: 10.99.1.1, asn: 65000}]\n", "", "adding or removing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := strings.Replace(clusterConfig, tc.from, tc.to, 1)
			if to == clusterConfig {
				t.Fatal("the test's edit changed nothing")
			}
			err := checkNodeChange(cur, applytest.Desired(t, to))
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// clusterNodes is clusterConfig as node n1 of a cluster of two.
const clusterNodes = `
cluster:
  nodes:
    - {name: n1, address: 10.99.1.2, local_ips: [10.100.2.11]}
    - {name: n2, address: 10.99.2.2, local_ips: [10.100.2.12]}
`

// TestDecideRoutesInACluster: the other node's local IP is announced as
// a backup, and the VIPs wait for the peers' connections.
func TestDecideRoutesInACluster(t *testing.T) {
	yaml := strings.Replace(clusterConfig, "  local_ips: [10.100.2.11, 2001:db8:2::11]\n", "", 1) + clusterNodes
	yaml = strings.Replace(yaml, " local_ips: [10.100.2.99],", "", 1)
	d := applytest.Desired(t, yaml)
	if got := fmt.Sprint(d.Services[0].LocalIPs); got != "[10.100.2.11]" {
		t.Fatalf("n1's local IPs from the cluster section: %s", got)
	}
	got := brief(decideRoutes(statusOf(d), d, nodeState{syncing: true}))
	want := "10.100.2.11/32 local_ip true\n10.100.2.12/32 peer_local_ip true\n" +
		"192.0.2.10/32 vip false (" + api.WithdrawnSync + ") 65000:1,65000:80\n192.0.2.20/32 vip false (" + api.WithdrawnSync + ") 65000:1"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := checkClusterChange(d, applytest.Desired(t, strings.Replace(yaml, "10.99.2.2", "10.99.2.3", 1))); err == nil {
		t.Error("a cluster change applied without a restart")
	}
}
