// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// halfOpenTable is a full table of a test: connections of one real, by
// client port, with the local address each got.
type halfOpenTable struct {
	e      *testEnv
	f      family
	real   netip.AddrPort
	locals map[uint16]netip.AddrPort
}

// syns offers n SYNs from client ports first, first+1, ... and returns
// the ports whose SYN was forwarded; the others must be dropped.
func (h *halfOpenTable) syns(t *testing.T, first uint16, n int) []uint16 {
	t.Helper()
	var taken []uint16
	for i := range n {
		cport := first + uint16(i)
		v, out := h.e.run(h.e.clientPkt(h.f, loadbalancer.TCP, cport, 80, "S").frame(t))
		switch v {
		case XDPRedirect:
			if dst := dstOf(t, out); dst != h.real {
				t.Fatalf("SYN from port %d went to %s, want %s", cport, dst, h.real)
			}
			taken = append(taken, cport)
			h.locals[cport] = srcOf(t, out)
		case XDPDrop:
		default:
			t.Fatalf("SYN from port %d: verdict %s", cport, v)
		}
	}
	return taken
}

func (h *halfOpenTable) fwdKey(cport uint16) ctKey {
	return keyOf(netip.AddrPortFrom(h.f.client, cport), netip.AddrPortFrom(h.f.vip, 80), loadbalancer.TCP)
}

func (h *halfOpenTable) revKey(cport uint16) ctKey {
	return keyOf(h.real, h.locals[cport], loadbalancer.TCP)
}

// works checks that a connection forwards its client's ACK to the real
// and the real's reply to the client.
func (h *halfOpenTable) works(t *testing.T, cport uint16) {
	t.Helper()
	out := h.e.with(t).expect(h.e.clientPkt(h.f, loadbalancer.TCP, cport, 80, "A").frame(t), XDPRedirect, nil)
	if src := srcOf(t, out); src != h.locals[cport] {
		t.Fatalf("connection of port %d left from %s, want %s", cport, src, h.locals[cport])
	}
	reply := pkt{srcMAC: realMAC(1), dstMAC: h.e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
		src: h.real, dst: h.locals[cport]}
	if got := dstOf(t, h.e.with(t).expect(reply.frame(t), XDPRedirect, nil)); got != netip.AddrPortFrom(h.f.client, cport) {
		t.Fatalf("reply to %s went to %s, want the client's port %d", h.locals[cport], got, cport)
	}
}

// TestHalfOpenGivesWay fills a small table, completes the handshake of
// half of its connections, and offers new SYNs: while the half-open
// connections are young every new one that finds no slot is refused;
// once they are idle XLB_CT_HALF_OPEN_AGE seconds, new connections take
// their places (counted), the taken connections are gone in both
// directions, and every established connection, idle as long, still
// works both ways.
func TestHalfOpenGivesWay(t *testing.T) {
	const size, offered = 8, 100
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{Conns4: size, Conns6: size})
			real1, _ := e.oneRealService(f, loadbalancer.TCP)
			h := &halfOpenTable{e: e, f: f, real: real1, locals: map[uint16]netip.AddrPort{}}
			taken := h.syns(t, 20000, offered)
			if len(taken) < size || len(taken) == offered {
				t.Fatalf("took %d of %d connections into a table for %d", len(taken), offered, size)
			}
			var established, halfOpen []uint16
			for i, cport := range taken {
				if i%2 == 0 {
					h.works(t, cport) // the client's ACK: established
					established = append(established, cport)
				} else {
					halfOpen = append(halfOpen, cport)
				}
			}

			young := h.syns(t, 30000, offered)
			if st := e.ctStats(f); st.HalfOpenDrops != 0 || st.Refused == 0 {
				t.Fatalf("young half-open connections gave way: %+v", st)
			}
			halfOpen = append(halfOpen, young...)
			for _, cport := range append(append([]uint16(nil), established...), halfOpen...) {
				e.age(f, h.fwdKey(cport), ctHalfOpenAge)
				e.age(f, h.revKey(cport), ctHalfOpenAge)
			}

			before := e.drops()
			fresh := h.syns(t, 40000, offered)
			st := e.ctStats(f)
			if len(fresh) == 0 || st.HalfOpenDrops == 0 {
				t.Fatalf("no new connection took a stale half-open one's place: %d taken, counters %+v", len(fresh), st)
			}
			var gone []uint16
			for _, cport := range halfOpen {
				if !e.ctHas(f, h.fwdKey(cport)) {
					gone = append(gone, cport)
					if e.ctHas(f, h.revKey(cport)) {
						t.Errorf("half-open connection of port %d lost its forward entry but kept its reverse one", cport)
					}
				}
			}
			if uint64(len(gone)) != st.HalfOpenDrops {
				t.Errorf("%d half-open connections gone, %d counted", len(gone), st.HalfOpenDrops)
			}
			t.Logf("%d established, %d half-open; %d new SYNs took %d half-open places, %d refused",
				len(established), len(halfOpen), len(fresh), len(gone), offered-len(fresh))
			for _, cport := range established {
				h.works(t, cport)
			}
			for _, cport := range fresh {
				h.works(t, cport)
			}
			// the client of a connection that gave way is not forwarded
			for _, cport := range gone {
				e.expect(e.clientPkt(f, loadbalancer.TCP, cport, 80, "A").frame(t), XDPDrop, nil)
			}
			if got := e.drops()[DropTCPNotSYN] - before[DropTCPNotSYN]; got != uint64(len(gone)) {
				t.Errorf("%d ACKs of connections that gave way dropped as tcp_not_syn, want %d", got, len(gone))
			}
			if n := e.ctCount(f); n.Live != uint64(2*(len(established)+len(halfOpen)-len(gone)+len(fresh))) {
				t.Errorf("the walk finds %d live entries, want two for each of %d connections", n.Live,
					len(established)+len(halfOpen)-len(gone)+len(fresh))
			}
		})
	}
}
