// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// syncEvents watches e's sync events into a channel until the test ends.
func (e *testEnv) syncEvents() <-chan SyncConn {
	e.t.Helper()
	if err := e.dp.SetSync(true); err != nil {
		e.t.Fatal(err)
	}
	ch := make(chan SyncConn, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.dp.WatchSyncEvents(ctx, func(c SyncConn) { ch <- c })
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return ch
}

// sameConn compares connections but for their idle time, which the
// clock's ticks during a test may move (within 2 s).
func sameConn(a, b SyncConn) bool {
	idle := a.Idle - b.Idle
	a.Idle, b.Idle = 0, 0
	return a == b && idle >= -2*time.Second && idle <= 2*time.Second
}

func nextSync(t *testing.T, ch <-chan SyncConn) SyncConn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(3 * time.Second):
		t.Fatal("no sync event")
	}
	return SyncConn{}
}

// TestConnectionSync follows one connection from the node that opens it
// (A) to another (B): A reports it new and then established; B, given
// it, forwards the client's next segment exactly as A would (from A's
// local IP and port), and, once A's local IPs are B's to answer for, the
// real's reply to the client. A packet test on both nodes' programs.
func TestConnectionSync(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			a := newEnv(t, Options{})
			real1, local := a.oneRealService(f, loadbalancer.TCP)
			events := a.syncEvents()

			syn := a.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			a.expect(syn.frame(t), XDPRedirect, nil)
			want := SyncConn{Proto: loadbalancer.TCP, State: loadbalancer.StateSynSent, Client: syn.src, VIP: syn.dst, Local: local, Real: real1}
			if got := nextSync(t, events); !sameConn(got, want) {
				t.Fatalf("new connection event %+v, want %+v", got, want)
			}
			ack := syn
			ack.flags, ack.seq = "A", 1
			a.expect(ack.frame(t), XDPRedirect, nil)
			want.State = loadbalancer.StateEstablished
			if got := nextSync(t, events); !sameConn(got, want) {
				t.Fatalf("established event %+v, want %+v", got, want)
			}
			// a segment that changes no state says nothing
			a.expect(ack.frame(t), XDPRedirect, nil)
			select {
			case c := <-events:
				t.Fatalf("an event without a state change: %+v", c)
			case <-time.After(300 * time.Millisecond):
			}
			var walked []SyncConn
			if err := a.dp.SyncConns(0, func(c SyncConn) bool { walked = append(walked, c); return true }); err != nil {
				t.Fatal(err)
			}
			if len(walked) != 1 || !sameConn(walked[0], want) {
				t.Fatalf("SyncConns: %+v, want [%+v]", walked, want)
			}

			// node B: the same service and real, a local IP of its own
			b := newEnv(t, Options{})
			bLocal := f.real(9) // any address of the family B alone has
			b.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.MaglevHash, bLocal,
				loadbalancer.Real{Addr: real1.Addr(), Port: real1.Port(), Weight: 1})
			next := ack
			next.seq = 1
			b.expect(next.frame(t), XDPDrop, nil) // tcp_not_syn: B has no entry yet
			st, err := b.dp.InstallSynced(1, []SyncConn{want})
			if err != nil {
				t.Fatal(err)
			}
			if st != (SyncStats{Installed: 1}) {
				t.Fatalf("install: %+v", st)
			}
			b.expect(next.frame(t), XDPRedirect, next.translated(local, real1, b.realIf.HardwareAddr, realMAC(1)).frame(t))

			// the reply to A's local IP is not B's until B takes it over
			reply := pkt{srcMAC: realMAC(1), dstMAC: b.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
				src: real1, dst: local, payload: []byte("hi from real")}
			b.expect(reply.frame(t), XDPPass, reply.frame(t))
			if err := b.dp.SetPeerLocalIPs([]netip.Addr{local.Addr()}); err != nil {
				t.Fatal(err)
			}
			b.expect(reply.frame(t), XDPRedirect, reply.translated(syn.dst, syn.src, b.clientIf.HardwareAddr, clientMAC).frame(t))
			if err := b.dp.SetPeerLocalIPs(nil); err != nil {
				t.Fatal(err)
			}
			b.expect(reply.frame(t), XDPPass, reply.frame(t))

			// B's copy is not B's to sync, and a second install refreshes it
			var fromB []SyncConn
			if err := b.dp.SyncConns(0, func(c SyncConn) bool { fromB = append(fromB, c); return true }); err != nil {
				t.Fatal(err)
			}
			if len(fromB) != 0 {
				t.Errorf("B would sync A's connection: %+v", fromB)
			}
			closing := want
			closing.State = loadbalancer.StateFin
			if st, err := b.dp.InstallSynced(1, []SyncConn{closing}); err != nil || st != (SyncStats{Refreshed: 1}) {
				t.Fatalf("second install: %+v %v", st, err)
			}
			var states []loadbalancer.ConnState
			if err := b.dp.Conns(func(c loadbalancer.ConnEntry) bool { states = append(states, c.State); return true }); err != nil {
				t.Fatal(err)
			}
			if len(states) != 2 || states[0] != loadbalancer.StateFin || states[1] != loadbalancer.StateFin {
				t.Errorf("B's entries after the refresh: %v, want both fin", states)
			}

			// the client reuses its port for a new connection through A,
			// from another local port: it replaces B's closing copy, and
			// a late record of the old one changes nothing
			reopened := want
			reopened.State, reopened.Local = loadbalancer.StateSynSent, netip.AddrPortFrom(local.Addr(), local.Port()+7)
			if st, err := b.dp.InstallSynced(1, []SyncConn{reopened}); err != nil || st != (SyncStats{Installed: 1}) {
				t.Fatalf("install of the reopened connection: %+v %v", st, err)
			}
			if st, err := b.dp.InstallSynced(1, []SyncConn{closing}); err != nil || st != (SyncStats{Stale: 1}) {
				t.Fatalf("a late record of the old connection: %+v %v", st, err)
			}
			syn2 := next
			syn2.flags, syn2.seq = "A", 2
			b.expect(syn2.frame(t), XDPRedirect, syn2.translated(reopened.Local, real1, b.realIf.HardwareAddr, realMAC(1)).frame(t))

			// what B cannot install is counted, not written
			other := want
			other.VIP = netip.AddrPortFrom(f.vip, 81)
			stray := want
			stray.Client = netip.AddrPortFrom(f.client, 40001)
			stray.Real = netip.AddrPortFrom(f.real(3), 8080)
			if st, err := b.dp.InstallSynced(1, []SyncConn{other, stray}); err != nil || st != (SyncStats{NoService: 1, NoReal: 1}) {
				t.Errorf("install of unknown service and real: %+v %v", st, err)
			}
			// B's own connection of the same client is kept
			own := b.clientPkt(f, loadbalancer.TCP, 40002, 80, "S")
			b.expect(own.frame(t), XDPRedirect, nil)
			mine := want
			mine.Client = own.src
			if st, err := b.dp.InstallSynced(1, []SyncConn{mine}); err != nil || st != (SyncStats{Own: 1}) {
				t.Errorf("install over B's own connection: %+v %v", st, err)
			}
		})
	}
}
