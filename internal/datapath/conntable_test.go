// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// ctStats returns the connection-table counters of family f.
func (e *testEnv) ctStats(f family) ConnTableStats {
	e.t.Helper()
	all, err := e.dp.ConnTableStats()
	if err != nil {
		e.t.Fatal(err)
	}
	i := 0
	if f.v6 {
		i = 1
	}
	return all[i]
}

// ctCount walks the table of family f.
func (e *testEnv) ctCount(f family) ConnTableCount {
	e.t.Helper()
	all, err := e.dp.CountConnEntries()
	if err != nil {
		e.t.Fatal(err)
	}
	if f.v6 {
		return all[1]
	}
	return all[0]
}

// ctKey is the connection-table key of a packet src -> dst.
type ctKey struct {
	v4 xlbCt4Key
	v6 xlbCt6Key
}

func keyOf(src, dst netip.AddrPort, proto loadbalancer.Proto) ctKey {
	s, d := toAddr(src.Addr()), toAddr(dst.Addr())
	return ctKey{
		v4: xlbCt4Key{Src: s.W[0], Dst: d.W[0], Sport: htons(src.Port()), Dport: htons(dst.Port()), Proto: uint8(proto)},
		v6: xlbCt6Key{Src: s.W, Dst: d.W, Sport: htons(src.Port()), Dport: htons(dst.Port()), Proto: uint8(proto)},
	}
}

// ctHas tells whether the table of family f holds key k.
func (e *testEnv) ctHas(f family, k ctKey) bool {
	e.t.Helper()
	var err error
	if f.v6 {
		var v xlbCt6Entry
		err = e.dp.objs.Ct6.Lookup(k.v6, &v)
	} else {
		var v xlbCtEntry
		err = e.dp.objs.Ct4.Lookup(k.v4, &v)
	}
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		e.t.Fatal(err)
	}
	return err == nil
}

// age moves the last packet of entry k secs into the past.
func (e *testEnv) age(f family, k ctKey, secs uint32) {
	e.t.Helper()
	var err error
	if f.v6 {
		var v xlbCt6Entry
		if err = e.dp.objs.Ct6.Lookup(k.v6, &v); err == nil {
			v.Ct.LastSeen -= secs
			err = e.dp.objs.Ct6.Put(k.v6, v)
		}
	} else {
		var v xlbCtEntry
		if err = e.dp.objs.Ct4.Lookup(k.v4, &v); err == nil {
			v.LastSeen -= secs
			err = e.dp.objs.Ct4.Put(k.v4, v)
		}
	}
	if err != nil {
		e.t.Fatalf("age entry: %v", err)
	}
}

// TestConnTableCounters follows the counters of one table through a
// connection's life: what inserts, what misses, what an expired entry
// and a flush count. The other family's counters must not move.
func TestConnTableCounters(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.oneRealService(f, loadbalancer.TCP)
			other := families[0]
			if !f.v6 {
				other = families[1]
			}
			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			reply := func(to netip.AddrPort, flags string) []byte {
				return pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: flags,
					src: real1, dst: to}.frame(t)
			}
			ack := func(cport uint16) []byte { return e.clientPkt(f, loadbalancer.TCP, cport, 80, "A").frame(t) }
			var want ConnTableStats
			for _, step := range []struct {
				name    string
				do      func()
				verdict Verdict
				in      []byte
				add     ConnTableStats // what the step adds to the counters
				entries uint64         // what a walk then finds
				live    uint64
			}{
				{name: "a SYN inserts both entries", in: syn.frame(t), verdict: XDPRedirect,
					add: ConnTableStats{Inserts: 2}, entries: 2, live: 2},
				{name: "the reply finds its entry", in: reply(local, "SA"), verdict: XDPRedirect, entries: 2, live: 2},
				{name: "the next segment finds its entry", in: ack(40000), verdict: XDPRedirect, entries: 2, live: 2},
				{name: "a reply to a local port without entry is a miss", in: reply(netip.AddrPortFrom(f.laddr, 1030), "A"),
					verdict: XDPPass, add: ConnTableStats{ReplyMisses: 1}, entries: 2, live: 2},
				{name: "to a local IP's port below the range is not", in: reply(netip.AddrPortFrom(f.laddr, 80), "A"),
					verdict: XDPPass, entries: 2, live: 2},
				{name: "an ACK to a service without entry is a miss", in: ack(40001), verdict: XDPDrop,
					add: ConnTableStats{ForwardMisses: 1}, entries: 2, live: 2},
				{name: "a SYN to no service is nothing", in: e.clientPkt(f, loadbalancer.TCP, 40000, 81, "S").frame(t), verdict: XDPPass,
					entries: 2, live: 2},
				{name: "an ACK on an expired entry is not a miss", in: ack(40000), verdict: XDPDrop, entries: 2, live: 1,
					do: func() { e.age(f, keyOf(syn.src, syn.dst, loadbalancer.TCP), 1000) }},
				{name: "a SYN replacing the expired entry inserts only the new reverse one", in: syn.frame(t), verdict: XDPRedirect,
					add: ConnTableStats{Inserts: 1}, entries: 3, live: 3},
				{name: "a flush counts what it removed", entries: 0, live: 0, add: ConnTableStats{Removals: 3},
					do: func() {
						if n, err := e.dp.FlushRealConns(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, real1); err != nil || n != 1 {
							t.Fatalf("flush: %d connections, %v; want 1", n, err)
						}
					}},
				{name: "a reply of the flushed connection is a miss", in: reply(local, "A"), verdict: XDPPass,
					add: ConnTableStats{ReplyMisses: 1}},
				{name: "zeroing the other counters keeps these", do: func() {
					if err := e.dp.ZeroCounters(nil); err != nil {
						t.Fatal(err)
					}
				}},
			} {
				if step.do != nil {
					step.do()
				}
				if step.in != nil {
					e.with(t).expect(step.in, step.verdict, nil)
				}
				want.Inserts += step.add.Inserts
				want.Removals += step.add.Removals
				want.ReplyMisses += step.add.ReplyMisses
				want.ForwardMisses += step.add.ForwardMisses
				got := e.ctStats(f)
				want.Family, want.MaxEntries = got.Family, got.MaxEntries
				if got != want {
					t.Fatalf("%s: counters %+v, want %+v", step.name, got, want)
				}
				if n := e.ctCount(f); n.Entries != step.entries || n.Live != step.live || got.Entries() != step.entries {
					t.Fatalf("%s: the walk finds %+v and the counters %d entries, want %d entries, %d live",
						step.name, n, got.Entries(), step.entries, step.live)
				}
				if o := e.ctStats(other); o.Inserts+o.Removals+o.ReplyMisses+o.ForwardMisses != 0 {
					t.Fatalf("%s: the %s table's counters moved: %+v", step.name, other.name, o)
				}
			}
		})
	}
}

// TestConnTableOverfilled overfills a 32-entry table with 100
// connections: the counters' occupancy stays clamped at the table's
// size, and each connection the LRU evicted shows as a miss of its next
// packet in either direction.
func TestConnTableOverfilled(t *testing.T) {
	const size, conns = 32, 100
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{ConnEntries: size, Conn6Entries: size})
			real1, _ := e.oneRealService(f, loadbalancer.TCP)
			client := func(i int) netip.AddrPort { return netip.AddrPortFrom(f.client, uint16(20000+i)) }
			local := func(i int) netip.AddrPort { return netip.AddrPortFrom(f.laddr, uint16(1025+i)) }
			for i := range conns {
				syn := e.clientPkt(f, loadbalancer.TCP, client(i).Port(), 80, "S")
				if got := srcOf(t, e.expect(syn.frame(t), XDPRedirect, nil)); got != local(i) {
					t.Fatalf("connection %d left from %s, want %s", i, got, local(i))
				}
			}
			st := e.ctStats(f)
			if st.Inserts != 2*conns || st.MaxEntries != size || st.Entries() != size || st.EvictedAtLeast() != 2*conns-size {
				t.Fatalf("counters %+v: %d entries, %d evicted at least; want %d inserts, %d entries, %d evicted",
					st, st.Entries(), st.EvictedAtLeast(), 2*conns, size, 2*conns-size)
			}
			if n := e.ctCount(f); n.Entries == 0 || n.Entries > size {
				t.Fatalf("the walk finds %d entries in a table of %d", n.Entries, size)
			}

			// Which halves survived decides, packet by packet, what is
			// a miss: read it before sending anything.
			var revGone, fwdGone []bool
			gone := 0
			for i := range conns {
				revGone = append(revGone, !e.ctHas(f, keyOf(real1, local(i), loadbalancer.TCP)))
				fwdGone = append(fwdGone, !e.ctHas(f, keyOf(client(i), netip.AddrPortFrom(f.vip, 80), loadbalancer.TCP)))
				if revGone[i] {
					gone++
				}
			}
			if gone < conns-size {
				t.Fatalf("%d reverse entries gone; a table of %d holds at most %d of %d", gone, size, size, conns)
			}
			var wantReply, wantFwd uint64
			for i := range conns {
				in := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "SA",
					src: real1, dst: local(i)}
				if revGone[i] {
					e.expect(in.frame(t), XDPPass, nil)
					wantReply++
				} else {
					e.expect(in.frame(t), XDPRedirect, nil)
				}
				ack := e.clientPkt(f, loadbalancer.TCP, client(i).Port(), 80, "A")
				if fwdGone[i] {
					e.expect(ack.frame(t), XDPDrop, nil)
					wantFwd++
				} else {
					e.run(ack.frame(t)) // forwarded, or dropped when its reverse half is due a refresh and gone
				}
			}
			t.Logf("%d of %d connections lost their reverse entry, %d their forward one", wantReply, conns, wantFwd)
			st = e.ctStats(f)
			if st.ReplyMisses != wantReply || st.ForwardMisses != wantFwd || st.Inserts != 2*conns {
				t.Fatalf("counters %+v; want %d reply misses, %d forward misses, no insert more", st, wantReply, wantFwd)
			}
		})
	}
}

// TestConnTableFillCounts checks that entries the control plane writes
// straight into the table count as inserts.
func TestConnTableFillCounts(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	real1, _ := e.oneRealService(f, loadbalancer.TCP)
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	conn := func(i int) EstablishedConn {
		return EstablishedConn{Client: netip.AddrPortFrom(f.client, uint16(30000+i)), Real: real1, Local: netip.AddrPortFrom(f.laddr, uint16(2000+i))}
	}
	// a connection to a real the service does not have is refused before
	// anything is written
	stranger := netip.AddrPortFrom(f.client, 9)
	bad := func(i int) EstablishedConn {
		c := conn(i)
		if i == 5 {
			c.Real = stranger
		}
		return c
	}
	if err := e.dp.PutConns(key, 10, 0, bad); !errors.Is(err, loadbalancer.ErrNotFound) {
		t.Fatalf("PutConns with real %s: %v; want ErrNotFound", stranger, err)
	}
	if st, n := e.ctStats(f), e.ctCount(f); st.Inserts != 0 || n.Entries != 0 {
		t.Fatalf("counters %+v and walk %+v after a refused put; want nothing", st, n)
	}
	if err := e.dp.PutConns(key, 10, 0, conn); err != nil {
		t.Fatal(err)
	}
	if st, n := e.ctStats(f), e.ctCount(f); st.Inserts != 20 || st.Entries() != 20 || n.Entries != 20 || n.Live != 20 {
		t.Fatalf("counters %+v and walk %+v after filling 10 connections; want 20 entries", st, n)
	}
}
