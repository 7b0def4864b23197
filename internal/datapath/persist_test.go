// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// clientFrom is a client's SYN to VIP:80 from addr:port.
func (e *testEnv) clientFrom(f family, addr netip.Addr, port uint16) pkt {
	p := e.clientPkt(f, loadbalancer.TCP, port, 80, "S")
	p.src = netip.AddrPortFrom(addr, port)
	return p
}

// realOf sends p and returns the real it went to.
func (e *testEnv) realOf(p pkt) netip.Addr {
	e.t.Helper()
	return dstOf(e.t, e.expect(p.frame(e.t), XDPRedirect, nil)).Addr()
}

// clientAddr returns the n-th client address of a family, in the /24
// (IPv4) or /64 (IPv6) block numbered block.
func clientAddr(f family, block, n byte) netip.Addr {
	if f.v6 {
		return netip.AddrFrom16([16]byte{0xfd, 0, 0, 1, 0, 0, 0, block, 0, 0, 0, 0, 0, 0, 0, n})
	}
	return netip.AddrFrom4([4]byte{10, 0, block, n})
}

// TestPersistence: a persistent rr service sends every new connection of a
// client prefix to the real its first went to; other prefixes go on with
// rr; a drained, failed or unresolved real is not reused and the prefix
// follows its new real; an expired entry is scheduled anew.
func TestPersistence(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			prefix := uint8(24)
			if f.v6 {
				prefix = 64
			}
			key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
			svc := loadbalancer.Service{Key: key, Scheduler: loadbalancer.RoundRobin, LocalIPs: []netip.Addr{f.laddr}, Persistent: 300, PersistPrefix: prefix}
			if err := e.dp.AddService(svc); err != nil {
				t.Fatal(err)
			}
			all := reals(f, 1, 1, 1, 1)
			if err := e.dp.SetReals(key, all); err != nil {
				t.Fatal(err)
			}
			a, a2, b := clientAddr(f, 1, 5), clientAddr(f, 1, 77), clientAddr(f, 2, 5)

			// the first connection is scheduled (rr: real 1) and its
			// bytes are those of any FullNAT connection
			first := e.clientFrom(f, a, 40000)
			e.expect(first.frame(t), XDPRedirect, first.translated(netip.AddrPortFrom(f.laddr, 1025),
				netip.AddrPortFrom(f.real(1), 80), e.realIf.HardwareAddr, realMAC(1)).frame(t))
			for i, p := range []pkt{e.clientFrom(f, a, 40001), e.clientFrom(f, a2, 40002), e.clientFrom(f, a, 40003)} {
				if got := e.realOf(p); got != f.real(1) {
					t.Fatalf("connection %d of the prefix went to %s, want %s (persistent)", i+2, got, f.real(1))
				}
			}
			if got := e.realOf(e.clientFrom(f, b, 40000)); got != f.real(2) {
				t.Fatalf("another prefix went to %s, want the next in rr, %s", got, f.real(2))
			}

			// drained: the prefix moves, and stays on its new real
			drained := slices.Clone(all)
			drained[0].Weight = 0
			if err := e.dp.SetReals(key, drained); err != nil {
				t.Fatal(err)
			}
			moved := e.realOf(e.clientFrom(f, a, 40010))
			if moved == f.real(1) {
				t.Fatal("a new connection of the prefix went to the drained real")
			}
			for port := uint16(40011); port < 40014; port++ {
				if got := e.realOf(e.clientFrom(f, a2, port)); got != moved {
					t.Fatalf("after the move, %s, want %s", got, moved)
				}
			}

			// health: the prefix's real fails, the prefix moves again
			if err := e.dp.SetRealHealth(key, netip.AddrPortFrom(moved, 80), false); err != nil {
				t.Fatal(err)
			}
			again := e.realOf(e.clientFrom(f, a, 40020))
			if again == moved || again == f.real(1) {
				t.Fatalf("after %s failed, the prefix went to %s", moved, again)
			}

			// unresolved: the next hop of the prefix's real is not
			// resolved (XLB_REAL_F_UNRESOLVED), the prefix moves again
			if err := e.dp.SetUnresolved(map[netip.Addr]bool{again: true}); err != nil {
				t.Fatal(err)
			}
			last := e.realOf(e.clientFrom(f, a, 40025))
			if last == again || last == moved || last == f.real(1) {
				t.Fatalf("after %s went unresolved, the prefix went to %s", again, last)
			}
			if err := e.dp.SetUnresolved(nil); err != nil {
				t.Fatal(err)
			}

			// expired: the entry is no longer used
			var k xlbPersistKey
			var v xlbPersistEntry
			it := e.dp.objs.Persist.Iterate()
			var keys []xlbPersistKey
			for it.Next(&k, &v) {
				keys = append(keys, k)
			}
			for _, k := range keys {
				if err := e.dp.objs.Persist.Put(k, xlbPersistEntry{RealId: v.RealId, Expires: 0}); err != nil {
					t.Fatal(err)
				}
			}
			if len(keys) != 2 {
				t.Fatalf("%d persistence entries, want 2 (two prefixes)", len(keys))
			}
			seen := map[netip.Addr]bool{}
			for port := uint16(40030); port < 40034; port++ {
				seen[e.realOf(e.clientFrom(f, clientAddr(f, 3, byte(port)), port))] = true
			}
			if len(seen) != 1 {
				t.Fatalf("a new prefix's connections reached %v, want one real", seen)
			}
		})
	}
}

// TestDownRealLeavesSchedule: a real marked down gets no new connection
// and keeps its established ones; up again, it is back in the rotation.
func TestDownRealLeavesSchedule(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1, 1, 1)...)
	held := e.clientPkt(f, loadbalancer.TCP, 30000, 80, "S")
	if got := e.realOf(held); got != f.real(1) {
		t.Fatalf("first connection went to %s", got)
	}
	if err := e.dp.SetRealHealth(key, netip.AddrPortFrom(f.real(1), 80), false); err != nil {
		t.Fatal(err)
	}
	r := func(n int) netip.Addr { return f.real(n) }
	// the cursor has moved once (to slot 1): of the table [2 3], 3 first
	if got, want := e.newFlows(f, 4, 31000), []netip.Addr{r(3), r(2), r(3), r(2)}; !slices.Equal(got, want) {
		t.Errorf("with real 1 down: %v, want %v", got, want)
	}
	next := held
	next.flags, next.seq = "A", 1
	if got := e.realOf(next); got != f.real(1) {
		t.Errorf("the held connection's next packet went to %s, want the down real %s", got, f.real(1))
	}
	st, err := e.dp.Status()
	if err != nil {
		t.Fatal(err)
	}
	if rs := st[0].Reals[0]; !rs.Down || rs.TableWeight != 0 || rs.Weight != 1 {
		t.Errorf("status of the down real: down %v, table weight %d, weight %d", rs.Down, rs.TableWeight, rs.Weight)
	}

	// reset: the down real's connections go
	n, err := e.dp.FlushRealConns(key, netip.AddrPortFrom(f.real(1), 80))
	if err != nil || n != 1 {
		t.Fatalf("flushed %d connections (%v), want 1", n, err)
	}
	// (a segment of no connection is not a new one: dropped, as IPVS does)
	before, err := e.dp.Drops()
	if err != nil {
		t.Fatal(err)
	}
	e.expect(next.frame(t), XDPDrop, nil)
	if after, err := e.dp.Drops(); err != nil || after[DropTCPNotSYN] != before[DropTCPNotSYN]+1 {
		t.Errorf("after the flush, the connection's next packet: tcp_not_syn drops %d -> %d (%v), want one more",
			before[DropTCPNotSYN], after[DropTCPNotSYN], err)
	}

	if err := e.dp.SetRealHealth(key, netip.AddrPortFrom(f.real(1), 80), true); err != nil {
		t.Fatal(err)
	}
	got := e.newFlows(f, 3, 32000)
	if !slices.Contains(got, f.real(1)) {
		t.Errorf("up again, real 1 got none of %v", got)
	}
}

// TestUnresolvedRealLeavesSchedule: a real whose next hop is unresolved
// gets no new connection and keeps its established ones; a real added at
// an unresolved address goes in out of scheduling; resolved, both are
// back in the rotation. The records carry the state (a restart reads it).
func TestUnresolvedRealLeavesSchedule(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1, 1)...)
	held := e.clientPkt(f, loadbalancer.TCP, 30000, 80, "S")
	if got := e.realOf(held); got != f.real(1) {
		t.Fatalf("first connection went to %s", got)
	}
	if err := e.dp.SetUnresolved(map[netip.Addr]bool{f.real(1): true, f.real(3): true}); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.SetReals(key, reals(f, 1, 1, 1)); err != nil { // real 3 joins, unresolved
		t.Fatal(err)
	}
	for i, r := range e.newFlows(f, 4, 31000) {
		if r != f.real(2) {
			t.Fatalf("new flow %d went to %s with reals 1 and 3 unresolved", i, r)
		}
	}
	next := held
	next.flags, next.seq = "A", 1
	if got := e.realOf(next); got != f.real(1) {
		t.Errorf("the held connection's next packet went to %s, want its unresolved real %s", got, f.real(1))
	}
	st, err := e.dp.Status()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true} {
		rs := st[0].Reals[i]
		if rs.Unresolved != want || (rs.TableWeight == 0) != want || rs.Down {
			t.Errorf("status of real %d: unresolved %v, table weight %d, down %v; want unresolved %v", i+1, rs.Unresolved, rs.TableWeight, rs.Down, want)
		}
	}
	var rec xlbReal
	if err := e.dp.objs.Reals.Lookup(uint32(0), &rec); err != nil || rec.Flags != realFInUse|realFUnresolved {
		t.Errorf("record of the unresolved real 1: flags %#x (%v), want %#x", rec.Flags, err, realFInUse|realFUnresolved)
	}

	if err := e.dp.SetUnresolved(map[netip.Addr]bool{}); err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]bool{}
	for _, r := range e.newFlows(f, 6, 32000) {
		seen[r] = true
	}
	if len(seen) != 3 {
		t.Errorf("resolved again, 6 new flows reached %v, want all 3 reals", seen)
	}
}

// TestLeastConnWeights: an lc service schedules by the weights the
// control plane installs, and only the named reals get connections.
func TestLeastConnWeights(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.WeightedLeastConn, f.laddr, reals(f, 1, 1, 1)...)
	if err := e.dp.SetLeastConnWeights(key, map[netip.AddrPort]uint32{netip.AddrPortFrom(f.real(3), 80): 1}); err != nil {
		t.Fatal(err)
	}
	for i, r := range e.newFlows(f, 5, 33000) {
		if r != f.real(3) {
			t.Fatalf("flow %d went to %s, want the only real with a weight, %s", i, r, f.real(3))
		}
	}
	if err := e.dp.SetLeastConnWeights(key, map[netip.AddrPort]uint32{
		netip.AddrPortFrom(f.real(1), 80): 2, netip.AddrPortFrom(f.real(2), 80): 1}); err != nil {
		t.Fatal(err)
	}
	count := map[netip.Addr]int{}
	for _, r := range e.newFlows(f, 30, 34000) {
		count[r]++
	}
	if count[f.real(1)] != 20 || count[f.real(2)] != 10 || count[f.real(3)] != 0 {
		t.Errorf("30 flows over weights 2:1:0 went %v", count)
	}
	if err := e.dp.SetLeastConnWeights(loadbalancer.ServiceKey{VIP: f.vip, Port: 81, Proto: loadbalancer.TCP}, nil); err == nil {
		t.Error("weights for a missing service: no error")
	}
}
