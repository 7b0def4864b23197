// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"net/netip"
	"testing"

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

func keyOf(src, dst netip.AddrPort, proto loadbalancer.Proto) ctKey {
	s, d := toAddr(src.Addr()), toAddr(dst.Addr())
	return ctKey{
		v4: xlbCt4Key{Src: s.W[0], Dst: d.W[0], Sport: htons(src.Port()), Dport: htons(dst.Port()), Proto: uint8(proto)},
		v6: xlbCt6Key{Src: s.W, Dst: d.W, Sport: htons(src.Port()), Dport: htons(dst.Port()), Proto: uint8(proto)},
	}
}

// table is the connection table of family f.
func (e *testEnv) table(f family) *ctTable {
	if f.v6 {
		return e.dp.ct[1]
	}
	return e.dp.ct[0]
}

// ctSlot returns the slot of the live entry of key k in the table of
// family f.
func (e *testEnv) ctSlot(f family, k ctKey) (uint32, bool) {
	e.t.Helper()
	now, err := monotonicSeconds()
	if err != nil {
		e.t.Fatal(err)
	}
	slot, ok, _, _ := e.table(f).find(k, now, e.dp.timeouts(), ctProbe)
	return slot, ok
}

// ctHas tells whether the table of family f holds a live entry of key k.
func (e *testEnv) ctHas(f family, k ctKey) bool {
	_, ok := e.ctSlot(f, k)
	return ok
}

// ctEntry returns the entry of key k in the table of family f, live or
// expired (the first of its probe).
func (e *testEnv) ctEntry(f family, k ctKey) *xlbCtEntry {
	e.t.Helper()
	t := e.table(f)
	home := t.home(k)
	for i := home; i < home+ctProbe; i++ {
		if t.head(i).isEntry() && t.holds(i, k) {
			return t.entry(i)
		}
	}
	e.t.Fatalf("no entry of %+v", k)
	return nil
}

// age moves the last packet of the entry of k secs into the past.
func (e *testEnv) age(f family, k ctKey, secs uint32) {
	e.t.Helper()
	e.ctEntry(f, k).LastSeen -= secs
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
				{name: "a SYN replacing the expired entry writes both entries anew", in: syn.frame(t), verdict: XDPRedirect,
					add: ConnTableStats{Inserts: 2}, entries: 3, live: 3},
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
				want.Refused += step.add.Refused
				got := e.ctStats(f)
				want.Family, want.MaxEntries, want.Conns, want.Bytes = got.Family, 2*uint64(got.Conns), got.Conns, got.Bytes
				if wantSize := (map[string]uint32{FamilyIPv4: DefaultConns4, FamilyIPv6: DefaultConns6})[got.Family]; got.Conns != wantSize ||
					got.Bytes != ConnTableBytes(got.Family == FamilyIPv6, wantSize) {
					t.Fatalf("%s table sized for %d connections in %d bytes, want the default %d", got.Family, got.Conns, got.Bytes, wantSize)
				}
				if got != want {
					t.Fatalf("%s: counters %+v, want %+v", step.name, got, want)
				}
				if n := e.ctCount(f); n.Entries != step.entries || n.Live != step.live {
					t.Fatalf("%s: the walk finds %+v, want %d entries, %d live", step.name, n, step.entries, step.live)
				}
				if o := e.ctStats(other); o.Inserts+o.Removals+o.ReplyMisses+o.ForwardMisses != 0 {
					t.Fatalf("%s: the %s table's counters moved: %+v", step.name, other.name, o)
				}
			}
		})
	}
}

// drops reads the drop counters.
func (e *testEnv) drops() map[DropReason]uint64 {
	e.t.Helper()
	d, err := e.dp.Drops()
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// TestConnTableFullRefusesNew offers a table sized for 8 connections 100
// of them: it takes what fits (at least the 8), refuses the rest and
// counts each refusal as conn_table_full, and every connection it took
// keeps working both ways: a full table never evicts a live connection.
// Once those expire, their slots take new connections again.
func TestConnTableFullRefusesNew(t *testing.T) {
	const size, offered = 8, 100
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{Conns4: size, Conns6: size})
			real1, _ := e.oneRealService(f, loadbalancer.TCP)
			before := e.drops()
			var taken []uint16 // client ports
			locals := map[uint16]netip.AddrPort{}
			for i := range offered {
				cport := uint16(20000 + i)
				syn := e.clientPkt(f, loadbalancer.TCP, cport, 80, "S")
				v, out := e.run(syn.frame(t))
				switch v {
				case XDPRedirect:
					taken = append(taken, cport)
					locals[cport] = srcOf(t, out)
				case XDPDrop:
				default:
					t.Fatalf("SYN %d: verdict %s", i, v)
				}
			}
			after := e.drops()
			refused := offered - len(taken)
			if len(taken) < size || refused == 0 {
				t.Fatalf("took %d of %d connections into a table for %d", len(taken), offered, size)
			}
			if got := after[DropConnTableFull] - before[DropConnTableFull]; got != uint64(refused) || e.ctStats(f).Refused != uint64(refused) {
				t.Fatalf("%d refused, %d counted as conn_table_full (drops %v), counters %+v", refused, got, after, e.ctStats(f))
			}
			if n := e.ctCount(f); n.Live != uint64(2*len(taken)) {
				t.Fatalf("the walk finds %+v, want %d live entries", n, 2*len(taken))
			}
			t.Logf("a table of %d connections (%d slots) took %d of %d", size, CtSlots(size), len(taken), offered)
			for _, cport := range taken {
				e.expect(e.clientPkt(f, loadbalancer.TCP, cport, 80, "A").frame(t), XDPRedirect, nil)
				reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
					src: real1, dst: locals[cport]}
				if got := dstOf(t, e.expect(reply.frame(t), XDPRedirect, nil)); got != netip.AddrPortFrom(f.client, cport) {
					t.Fatalf("reply to %s went to %s, want the client's port %d", locals[cport], got, cport)
				}
			}
			// expired (and past the hold of reverse entries), the slots
			// take new connections again: at least the table's size
			for _, cport := range taken {
				e.age(f, keyOf(netip.AddrPortFrom(f.client, cport), netip.AddrPortFrom(f.vip, 80), loadbalancer.TCP), 10000)
				e.age(f, keyOf(real1, locals[cport], loadbalancer.TCP), 10000)
			}
			again := 0
			for i := range offered {
				if v, _ := e.run(e.clientPkt(f, loadbalancer.TCP, uint16(30000+i), 80, "S").frame(t)); v == XDPRedirect {
					again++
				}
			}
			if again < size {
				t.Fatalf("the expired table took %d new connections, want %d at least (drops %v)", again, size, e.drops())
			}
		})
	}
}

// TestPutConnsFoundByDataPath writes connections from Go into a table
// filled to its size and checks that the data path finds every one in
// both directions (Go and C hash, home and probe alike), that what the
// control plane writes counts as inserts, and that a bad connection
// leaves the table untouched.
func TestPutConnsFoundByDataPath(t *testing.T) {
	const n = 200
	e := newEnv(t, Options{Conns4: n})
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
	if _, err := e.dp.PutConns(key, 10, 0, bad, nil); !errors.Is(err, loadbalancer.ErrNotFound) {
		t.Fatalf("PutConns with real %s: %v; want ErrNotFound", stranger, err)
	}
	if st, n := e.ctStats(f), e.ctCount(f); st.Inserts != 0 || n.Entries != 0 {
		t.Fatalf("counters %+v and walk %+v after a refused put; want nothing", st, n)
	}
	locals := make([]netip.AddrPort, n)
	moved := 0
	put, err := e.dp.PutConns(key, n, 0, conn, func(i int, l netip.AddrPort) {
		locals[i] = l
		if l != conn(i).Local {
			moved++
		}
	})
	if err != nil || put != n {
		t.Fatalf("put %d of %d connections: %v", put, n, err)
	}
	t.Logf("%d of %d connections moved to another local port for room", moved, n)
	if st, c := e.ctStats(f), e.ctCount(f); st.Inserts != 2*n || c.Entries != 2*n || c.Live != 2*n {
		t.Fatalf("counters %+v and walk %+v after filling %d connections; want %d entries", st, c, n, 2*n)
	}
	// where the forward entries lie, from each one's slot and home
	var want [4]uint64
	for i := range n {
		c := conn(i)
		k := keyOf(c.Client, netip.AddrPortFrom(f.vip, 80), loadbalancer.TCP)
		slot, _ := e.ctSlot(f, k)
		want[min((slot-e.table(f).home(k))/2, 3)]++
	}
	depths, err := e.dp.ConnTableDepths()
	if err != nil {
		t.Fatal(err)
	}
	if d := depths[0]; d.Family != FamilyIPv4 || d.Forward != n || d.ByPair != want || d.MeanPairs() < 1 || depths[1].Forward != 0 {
		t.Fatalf("depths %+v, want %d forward IPv4 entries by pair %v", depths, n, want)
	}
	t.Logf("forward entries by pair from home: %v, %.2f pairs per lookup", want, depths[0].MeanPairs())
	for i := range n {
		c := conn(i)
		ack := e.clientPkt(f, loadbalancer.TCP, c.Client.Port(), 80, "A")
		if got := srcOf(t, e.expect(ack.frame(t), XDPRedirect, nil)); got != locals[i] {
			t.Fatalf("connection %d left from %s, want %s", i, got, locals[i])
		}
		reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A", src: real1, dst: locals[i]}
		if got := dstOf(t, e.expect(reply.frame(t), XDPRedirect, nil)); got != c.Client {
			t.Fatalf("reply of connection %d went to %s, want %s", i, got, c.Client)
		}
	}
	if _, err := e.dp.PutConns(key, 1, 0, conn, nil); !errors.Is(err, errConnExists) {
		t.Fatalf("putting connection 0 again: %v, want %v", err, errConnExists)
	}
}
