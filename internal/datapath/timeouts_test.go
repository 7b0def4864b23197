// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestStateTimeouts brings a connection into each state with packets and
// checks, through the data path, that its entry lives exactly its state's
// default timeout: idle that long, the probe packet is forwarded on the
// entry; one second more, the entry is gone (a SYN or a UDP datagram then
// opens a new connection, two entries inserted; any other TCP segment is
// dropped as tcp_not_syn). The closing states' defaults are DPVS's, so a
// closed connection's entry, and the port it names, go within seconds.
func TestStateTimeouts(t *testing.T) {
	def := loadbalancer.DefaultSettings()
	for _, tc := range []struct {
		name    string
		proto   loadbalancer.Proto
		setup   []string // the client's flags, in order
		probe   string
		timeout time.Duration
		want    time.Duration // the documented default
	}{
		{"handshake", loadbalancer.TCP, []string{"S"}, "S", def.TCPSynTimeout, 30 * time.Second},
		{"established", loadbalancer.TCP, []string{"S", "A"}, "A", def.TCPTimeout, 900 * time.Second},
		{"after a FIN", loadbalancer.TCP, []string{"S", "A", "FA"}, "A", def.TCPFinTimeout, 7 * time.Second},
		{"after a RST", loadbalancer.TCP, []string{"S", "A", "R"}, "A", def.TCPRstTimeout, 3 * time.Second},
		{"udp", loadbalancer.UDP, []string{""}, "", def.UDPTimeout, 300 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.timeout != tc.want {
				t.Fatalf("default timeout %v, documented %v", tc.timeout, tc.want)
			}
			e := newEnv(t, Options{})
			f := families[0]
			e.oneRealService(f, tc.proto)
			for _, flags := range tc.setup {
				e.expect(e.clientPkt(f, tc.proto, 40000, 80, flags).frame(t), XDPRedirect, nil)
			}
			key := keyOf(netip.AddrPortFrom(f.client, 40000), netip.AddrPortFrom(f.vip, 80), tc.proto)
			secs := uint32(tc.timeout / time.Second)
			probe := e.clientPkt(f, tc.proto, 40000, 80, tc.probe).frame(t)

			e.age(f, key, secs)
			inserts := e.ctStats(f).Inserts
			e.expect(probe, XDPRedirect, nil)
			if got := e.ctStats(f).Inserts; got != inserts {
				t.Fatalf("idle %d s (its timeout): the probe opened a new connection (%d inserts, had %d)", secs, got, inserts)
			}

			e.age(f, key, secs+1)
			before := e.drops()
			if tc.probe == "A" {
				e.expect(probe, XDPDrop, nil)
				if got := e.drops()[DropTCPNotSYN] - before[DropTCPNotSYN]; got != 1 {
					t.Fatalf("idle %d s: the segment was dropped, but not as tcp_not_syn (drops %v)", secs+1, e.drops())
				}
				return
			}
			e.expect(probe, XDPRedirect, nil)
			if got := e.ctStats(f).Inserts; got != inserts+2 {
				t.Fatalf("idle %d s: %d inserts, want %d: the expired entry was not replaced by a new connection", secs+1, got, inserts+2)
			}
		})
	}
}

// TestServiceTimeouts: a service's own timeouts rule its entries, both
// directions, while another service's follow the global ones, and
// UpdateService changes them for the entries already there.
func TestServiceTimeouts(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	own := loadbalancer.StateTimeouts{Established: 5 * time.Second}
	short := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	global := loadbalancer.ServiceKey{VIP: f.vip, Port: 81, Proto: loadbalancer.TCP}
	for _, k := range []loadbalancer.ServiceKey{short, global} {
		s := loadbalancer.Service{Key: k, Scheduler: loadbalancer.RoundRobin, LocalIPs: []netip.Addr{f.laddr}}
		if k == short {
			s.Timeouts = own
		}
		if err := e.dp.AddService(s); err != nil {
			t.Fatal(err)
		}
		if err := e.dp.SetReals(k, reals(f, 1)); err != nil {
			t.Fatal(err)
		}
	}
	locals := map[uint16]netip.AddrPort{}
	fwd := func(port uint16) ctKey {
		return keyOf(netip.AddrPortFrom(f.client, 40000), netip.AddrPortFrom(f.vip, port), loadbalancer.TCP)
	}
	rev := func(port uint16) ctKey {
		return keyOf(netip.AddrPortFrom(f.real(1), 80), locals[port], loadbalancer.TCP)
	}
	reply := func(port uint16) []byte {
		return pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
			src: netip.AddrPortFrom(f.real(1), 80), dst: locals[port]}.frame(t)
	}

	// both directions established
	for _, port := range []uint16{80, 81} {
		out := e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, port, "S").frame(t), XDPRedirect, nil)
		locals[port] = srcOf(t, out)
		e.expect(reply(port), XDPRedirect, nil)
		e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, port, "A").frame(t), XDPRedirect, nil)
	}

	// the listing shows each entry's timeout
	got := map[uint16]time.Duration{}
	if err := e.dp.Conns(func(c loadbalancer.ConnEntry) bool {
		if !c.Reverse {
			got[c.To.Port()] = c.Timeout
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if got[80] != 5*time.Second || got[81] != loadbalancer.DefaultSettings().TCPTimeout {
		t.Fatalf("listed timeouts %v, want 5s for port 80 and the global established timeout for 81", got)
	}

	// idle 6 s: the service of 5 s lost both entries, the other has them
	for _, port := range []uint16{80, 81} {
		e.age(f, fwd(port), 6)
		e.age(f, rev(port), 6)
	}
	e.expect(reply(81), XDPRedirect, nil)
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 81, "A").frame(t), XDPRedirect, nil)
	e.expect(reply(80), XDPPass, nil) // no entry: not ours
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 80, "A").frame(t), XDPDrop, nil)

	// a service's timeouts changed in place apply to its entries
	if err := e.dp.UpdateService(loadbalancer.Service{Key: global, Scheduler: loadbalancer.RoundRobin,
		LocalIPs: []netip.Addr{f.laddr}, Timeouts: loadbalancer.StateTimeouts{Established: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	e.age(f, fwd(81), 3)
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 81, "A").frame(t), XDPDrop, nil)
}
