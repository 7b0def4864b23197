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
