// SPDX-License-Identifier: Apache-2.0

package listing

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func TestWrite(t *testing.T) {
	svc := api.Service{
		VIP: netip.MustParseAddr("10.100.0.10"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin,
		Stats: api.Counters{Conns: 12, InPackets: 72, OutPackets: 48, InBytes: 4608, OutBytes: 7296},
		Reals: []api.Real{{
			Address: netip.MustParseAddr("10.100.2.1"), Port: 8080, Weight: 1,
			Stats:         api.Counters{Conns: 4, InPackets: 24, OutPackets: 16, InBytes: 1536, OutBytes: 2432},
			InactiveConns: 4,
		}},
	}
	for _, tc := range []struct {
		name string
		have Options
		want string
	}{
		{"weights", Options{}, `Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.100.0.10:80 rr
  -> 10.100.2.1:8080              FullNat 1      0          4
`},
		{"stats", Options{Stats: true}, `Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
  -> RemoteAddress:Port
TCP  10.100.0.10:80                     12       72       48     4608     7296
  -> 10.100.2.1:8080                     4       24       16     1536     2432
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Write(&b, []api.Service{svc}, tc.have); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestWriteHealthAndPersistence: a checked service adds the Health
// column; persistence shows in the Flags column as ipvsadm shows it.
func TestWriteHealthAndPersistence(t *testing.T) {
	real := func(addr string, health string) api.Real {
		return api.Real{Address: netip.MustParseAddr(addr), Port: 80, Weight: 1, Health: health, ActiveConns: 2}
	}
	svcs := []api.Service{{
		VIP: netip.MustParseAddr("10.100.0.10"), Port: 80, Protocol: loadbalancer.TCP,
		Scheduler: loadbalancer.WeightedLeastConn, Persistent: 300, Netmask: "255.255.255.0",
		Reals: []api.Real{real("10.100.2.1", "up"), real("10.100.2.2", "down")},
	}, {
		VIP: netip.MustParseAddr("fd00::10"), Port: 53, Protocol: loadbalancer.UDP,
		Scheduler: loadbalancer.RoundRobin, Persistent: 60, Netmask: "64",
		Reals: []api.Real{real("fd00::2:1", "")},
	}}
	want := `Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn Health
TCP  10.100.0.10:80 wlc persistent 300 mask 255.255.255.0
  -> 10.100.2.1:80                FullNat 1      2          0         up
  -> 10.100.2.2:80                FullNat 1      2          0         down
UDP  [fd00::10]:53 rr persistent 60 mask 64
  -> [fd00::2:1]:80               FullNat 1      2          0         -
`
	var b strings.Builder
	if err := Write(&b, svcs, Options{}); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestWriteUnresolved: an unresolved real brings the Health column even
// without a health check, and shows with its health when it has one.
func TestWriteUnresolved(t *testing.T) {
	real := func(addr, health, nextHop string) api.Real {
		return api.Real{Address: netip.MustParseAddr(addr), Port: 80, Weight: 1, Health: health, NextHop: nextHop}
	}
	for _, tc := range []struct {
		name  string
		reals []api.Real
		cells []string
	}{
		{"unchecked", []api.Real{real("10.0.0.1", "", ""), real("10.0.0.2", "", api.NextHopUnresolved)}, []string{"-", "unresolved"}},
		{"checked", []api.Real{real("10.0.0.1", "up", api.NextHopUnresolved), real("10.0.0.2", "down", api.NextHopUnresolved)},
			[]string{"unresolved", "down,unresolved"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svcs := []api.Service{{VIP: netip.MustParseAddr("10.100.0.10"), Port: 80, Protocol: loadbalancer.TCP,
				Scheduler: loadbalancer.RoundRobin, Reals: tc.reals}}
			var b strings.Builder
			if err := Write(&b, svcs, Options{}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if !strings.HasSuffix(lines[1], " Health") || len(lines) != 5 {
				t.Fatalf("no Health column:\n%s", b.String())
			}
			for i, cell := range tc.cells {
				if f := strings.Fields(lines[3+i]); f[len(f)-1] != cell {
					t.Errorf("real %d: Health %q, want %q", i+1, f[len(f)-1], cell)
				}
			}
		})
	}
}

// TestWriteTop: rates over the interval between two readings, the
// connections and health of each real, drops per second the most first.
func TestWriteTop(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	svc := func(conns, pkts uint64, weight uint32) []api.Service {
		return []api.Service{{VIP: netip.MustParseAddr("10.100.0.10"), Port: 80, Protocol: loadbalancer.TCP, Stats: api.Counters{Conns: conns, InPackets: pkts},
			Reals: []api.Real{{Address: netip.MustParseAddr("10.100.2.1"), Port: 80, Weight: weight, ActiveConns: 7, InactiveConns: 2, Stats: api.Counters{Conns: conns}}}}}
	}
	prev := Reading{At: at, Services: svc(100, 1000, 1), Stats: api.Stats{Drops: map[string]uint64{"no_real": 10, "tcp_not_syn": 0}}}
	cur := Reading{At: at.Add(2 * time.Second), Services: svc(300, 5000, 0), Stats: api.Stats{Drops: map[string]uint64{"no_real": 14, "tcp_not_syn": 20}}}
	var b strings.Builder
	if err := WriteTop(&b, prev, cur); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"rates over 2s",
		"TCP  10.100.0.10:80                    100      2000         0",
		"  -> 10.100.2.1:80                     100         0         0          0          0         7         2  drained",
		"drops/s: tcp_not_syn 10, no_real 2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}
