// SPDX-License-Identifier: Apache-2.0

package api

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestStatusOf: the counts and a warning for each thing that needs
// attention, in order: the host's, then per service, then the tables
// and the redirect losses.
func TestStatusOf(t *testing.T) {
	a := netip.MustParseAddr
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	info := DaemonInfo{Started: now.Add(-90 * time.Minute), HostWarnings: []string{"pins are off"}}
	svcs := []Service{
		{VIP: a("192.0.2.10"), Port: 80, Protocol: loadbalancer.TCP, LocalIPs: []netip.Addr{a("198.51.100.254")}, Reals: []Real{
			{Address: a("198.51.100.1"), Port: 80, Weight: 1},
			{Address: a("198.51.100.2"), Port: 80, Weight: 1, Health: "down", HealthReason: "connect: refused"},
			{Address: a("198.51.100.3"), Port: 80, Weight: 1, NextHop: NextHopUnresolved, NextHopReason: "next hop 198.51.100.3 dev eth1: FAILED (no answer)"},
			{Address: a("198.51.100.4"), Port: 80, Weight: 0},
		}},
		{VIP: a("192.0.2.10"), Port: 53, Protocol: loadbalancer.UDP, Reals: []Real{{Address: a("198.51.100.4"), Port: 53, Weight: 0}}},
	}
	stats := Stats{RedirectErrors: 5, ConnTables: []ConnTable{
		{Family: "ipv4", MaxEntries: 1000, LiveEntries: 950, Occupancy: 0.95},
		{Family: "ipv6", MaxEntries: 1000, LiveEntries: 10, Occupancy: 0.01},
	}}
	st := StatusOf(info, svcs, stats, now)
	if st.Uptime.String() != "1h30m0s" || st.Services.Total != 2 || st.Services.TCP != 1 || st.Services.UDP != 1 {
		t.Errorf("uptime %s, services %+v", st.Uptime, st.Services)
	}
	if r := st.Reals; r.Total != 5 || r.Up != 1 || r.Down != 1 || r.Unresolved != 1 || r.Drained != 2 {
		t.Errorf("reals %+v, want 5: 1 up, 1 down, 1 unresolved, 2 drained", r)
	}
	want := []string{
		"pins are off",
		"real 198.51.100.2:80 of tcp 192.0.2.10:80 is down: connect: refused",
		"real 198.51.100.3:80 of tcp 192.0.2.10:80 is unresolved: next hop 198.51.100.3 dev eth1: FAILED (no answer)",
		"service udp 192.0.2.10:53 has no local IP: it forwards nothing until one is added",
		"service udp 192.0.2.10:53 has no real taking new connections: they are dropped (no_real)",
		"the ipv4 connection table is 95% full (950 of 1000 entries): raise conn_table.ipv4",
		"5 frames were lost after a redirect since the start",
	}
	if len(st.Warnings) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(st.Warnings, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(st.Warnings[i], w) {
			t.Errorf("warning %d: %q, want %q", i, st.Warnings[i], w)
		}
	}
	if slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "ipv6") }) {
		t.Error("a table 1% full is warned about")
	}
}
