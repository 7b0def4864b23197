// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"net/netip"
	"testing"
)

// TestXLBShapes: each scenario's xlb DUT, and --conn-table over it.
func TestXLBShapes(t *testing.T) {
	cpus := possibleCPUs
	defer func() { possibleCPUs = cpus }()
	possibleCPUs = func() int { return 2 }
	for _, tc := range []struct {
		scenario string
		o        Options
		want     XLBShape
	}{
		{"pps", Options{}, DefaultXLBShape},
		{"pps", Options{Flows: []int{1000, 800_000}}, DefaultXLBShape},
		// 1M flows fill the default table (1,048,576) without the
		// quarter to spare an operator leaves, which it needs
		{"multiflow", Options{Flows: []int{1000, 1_000_000}, Reals: 2},
			XLBShape{LocalIPs: 32, Scheduler: "mh", ConnTable: 1_250_000, Timeouts: "{tcp: 60, tcp_fin: 2, udp: 300}"}},
		{"pps", Options{Flows: []int{1000, 10_000_000}, Reals: 2},
			XLBShape{LocalIPs: 254, Scheduler: "mh", ConnTable: 12_500_000, Timeouts: "{tcp: 60, tcp_fin: 2, udp: 300}"}},
		{"cps", Options{}, DPVSXLBShape},
		{"cc", Options{Conns: []int{1_000_000, 10_000_000}, Reals: 8},
			XLBShape{LocalIPs: 78, Scheduler: "mh", ConnTable: 12_500_000, Timeouts: "{tcp: 900, tcp_fin: 2, udp: 60}"}},
		{"cc", Options{Conns: []int{2000}, Reals: 2, ConnTable: 5000},
			XLBShape{LocalIPs: 32, Scheduler: "mh", ConnTable: 5000, Timeouts: "{tcp: 900, tcp_fin: 2, udp: 60}"}},
	} {
		if got := XLBShapeFor(tc.scenario, tc.o); got != tc.want {
			t.Errorf("%s %+v: shape %+v, want %+v", tc.scenario, tc.o, got, tc.want)
		}
	}
}

// TestLocalIPRange: the DUT's local IPs as one range of the
// configuration's form, the most the lab has room for included.
func TestLocalIPRange(t *testing.T) {
	for _, tc := range []struct {
		last string
		n    int
		want string
	}{
		{"10.160.2.254", 50, "10.160.2.205-254"},
		{"10.160.2.254", maxLabLocalIPs, "10.160.2.1-254"},
		{"fd00:a0:2::fe", 50, "fd00:a0:2::cd-fe"},
		{"fd00:a0:2::fe", maxLabLocalIPs, "fd00:a0:2::1-fe"},
	} {
		if got := localIPRange(netip.MustParseAddr(tc.last), tc.n); got != tc.want {
			t.Errorf("%d ending at %s: %q, want %q", tc.n, tc.last, got, tc.want)
		}
	}
}
