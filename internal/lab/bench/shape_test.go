// SPDX-License-Identifier: Apache-2.0

package bench

import "testing"

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
		{"pps", Options{Flows: []int{1000, 1_000_000}}, DefaultXLBShape},
		{"pps", Options{Flows: []int{1000, 10_000_000}, Reals: 2},
			XLBShape{LocalIPs: 256, Scheduler: "mh", ConnTable: 12_500_000, Timeouts: "{tcp: 60, tcp_fin: 2, udp: 300}"}},
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
