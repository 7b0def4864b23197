// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// newFlows sends the first packet of n new TCP flows from the client
// (source ports base..base+n-1) and returns the real each went to.
func (e *testEnv) newFlows(f family, n int, base uint16) []netip.Addr {
	e.t.Helper()
	out := make([]netip.Addr, n)
	for i := range out {
		in := e.clientPkt(f, loadbalancer.TCP, base+uint16(i), 80, "S")
		b := e.expect(in.frame(e.t), XDPRedirect, nil)
		out[i] = dstOf(e.t, b).Addr()
	}
	return out
}

func reals(f family, weights ...uint32) []loadbalancer.Real {
	out := make([]loadbalancer.Real, len(weights))
	for i, w := range weights {
		out[i] = loadbalancer.Real{Addr: f.real(i + 1), Port: 80, Weight: w}
	}
	return out
}

func TestRoundRobinAndWeighted(t *testing.T) {
	f := families[0]
	r := func(n int) netip.Addr { return f.real(n) }
	for _, tc := range []struct {
		name    string
		sched   loadbalancer.Scheduler
		weights []uint32
		want    []netip.Addr
	}{
		{"rr", loadbalancer.RoundRobin, []uint32{1, 1, 1}, []netip.Addr{r(1), r(2), r(3), r(1), r(2), r(3), r(1)}},
		{"rr ignores weights", loadbalancer.RoundRobin, []uint32{5, 1}, []netip.Addr{r(1), r(2), r(1), r(2)}},
		{"rr skips drained", loadbalancer.RoundRobin, []uint32{1, 0, 1}, []netip.Addr{r(1), r(3), r(1), r(3)}},
		{"wrr 5:1:1", loadbalancer.WeightedRoundRobin, []uint32{5, 1, 1},
			[]netip.Addr{r(1), r(1), r(2), r(1), r(3), r(1), r(1), r(1), r(1), r(2), r(1), r(3), r(1), r(1)}},
		{"wrr 2:1", loadbalancer.WeightedRoundRobin, []uint32{2, 1}, []netip.Addr{r(1), r(2), r(1), r(1), r(2), r(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
			e.addService(key, tc.sched, f.laddr, reals(f, tc.weights...)...)
			if got := e.newFlows(f, len(tc.want), 30000); !slices.Equal(got, tc.want) {
				t.Errorf("reals chosen %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMaglevMinimalDisruption(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
			all := reals(f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
			e.addService(key, loadbalancer.MaglevHash, f.laddr, all...)
			const n = 2000
			before := e.newFlows(f, n, 20000)
			perReal := map[netip.Addr]int{}
			for _, r := range before {
				perReal[r]++
			}
			if len(perReal) != len(all) {
				t.Fatalf("%d flows reached %d of %d reals", n, len(perReal), len(all))
			}

			removed := all[3].Addr
			if err := e.dp.SetReals(key, slices.Delete(slices.Clone(all), 3, 4)); err != nil {
				t.Fatal(err)
			}
			if err := e.dp.FlushConns(); err != nil { // schedule every flow anew
				t.Fatal(err)
			}
			after := e.newFlows(f, n, 20000)
			moved := 0
			for i := range before {
				switch {
				case after[i] == removed:
					t.Fatalf("flow %d still scheduled to the removed real", i)
				case before[i] != removed && after[i] != before[i]:
					moved++
				}
			}
			if limit := (n - perReal[removed]) / 100; moved > limit {
				t.Errorf("%d flows of remaining reals moved, want at most %d (1%%)", moved, limit)
			}
		})
	}
}

func TestSourceHashKeepsClientOnOneReal(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.SourceHash, f.laddr, reals(f, 1, 1, 1, 1)...)
	got := e.newFlows(f, 50, 10000)
	for i, r := range got {
		if r != got[0] {
			t.Fatalf("flow %d from the same client went to %s, first to %s", i, r, got[0])
		}
	}
	seen := map[netip.Addr]bool{}
	for n := 1; n <= 40; n++ {
		p := e.clientPkt(f, loadbalancer.TCP, 1234, 80, "S")
		p.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(100 + n)}), 1234)
		seen[dstOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Addr()] = true
	}
	if len(seen) < 3 {
		t.Errorf("40 clients reached %d of 4 reals", len(seen))
	}
}

func TestWeightZeroDrains(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1, 1)...)
	held := e.clientPkt(f, loadbalancer.TCP, 50000, 80, "S")
	if got := dstOf(t, e.expect(held.frame(t), XDPRedirect, nil)).Addr(); got != f.real(1) {
		t.Fatalf("first flow went to %s, want %s", got, f.real(1))
	}
	if err := e.dp.SetReals(key, reals(f, 0, 1)); err != nil {
		t.Fatal(err)
	}
	held.flags = "A"
	for i := 0; i < 3; i++ {
		if got := dstOf(t, e.expect(held.frame(t), XDPRedirect, nil)).Addr(); got != f.real(1) {
			t.Fatalf("established flow moved to %s after drain", got)
		}
	}
	for i, r := range e.newFlows(f, 10, 51000) {
		if r != f.real(2) {
			t.Fatalf("new flow %d went to drained real %s", i, r)
		}
	}
}

func TestExpiredEntryIsNewFlow(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.UDP}, loadbalancer.RoundRobin, f.laddr, reals(f, 1, 1)...)
	p := e.clientPkt(f, loadbalancer.UDP, 40000, 80, "")
	if got := dstOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Addr(); got != f.real(1) {
		t.Fatalf("first packet went to %s", got)
	}
	// Age the forward entry past the UDP timeout (300 s).
	e.age(f, keyOf(netip.AddrPortFrom(f.client, 40000), netip.AddrPortFrom(f.vip, 80), loadbalancer.UDP), 301)
	if got := dstOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Addr(); got != f.real(2) {
		t.Errorf("packet after expiry went to %s, want the next real %s", got, f.real(2))
	}
}

func TestLocalPortExhaustion(t *testing.T) {
	e := newEnv(t, Options{})
	s := loadbalancer.DefaultSettings()
	s.LocalPortMin, s.LocalPortMax = 2000, 2003
	if err := e.dp.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	used := map[uint16]bool{}
	for i := 0; i < 4; i++ {
		p := e.clientPkt(f, loadbalancer.TCP, uint16(40000+i), 80, "S")
		port := srcOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Port()
		if used[port] || port < 2000 || port > 2003 {
			t.Fatalf("connection %d got local port %d (used: %v)", i, port, used)
		}
		used[port] = true
	}
	before, _ := e.dp.Drops()
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40010, 80, "S").frame(t), XDPDrop, nil)
	after, _ := e.dp.Drops()
	if after[DropNoLocalPort] != before[DropNoLocalPort]+1 {
		t.Errorf("no_lport drops %d -> %d, want one more", before[DropNoLocalPort], after[DropNoLocalPort])
	}
	// counted for the service and for the local IP whose ports ran out
	st, err := e.dp.Status()
	if err != nil || len(st) != 1 || st[0].NoLport != 1 {
		t.Errorf("service status %+v (%v), want no_lport 1", st, err)
	}
	if ex, err := e.dp.LocalIPExhaustion(); err != nil || len(ex) != 1 || ex[f.laddr] != 1 {
		t.Errorf("local IP exhaustion %v (%v), want 1 for %s", ex, err, f.laddr)
	}
	if err := e.dp.ZeroCounters(nil); err != nil {
		t.Fatal(err)
	}
	if ex, _ := e.dp.LocalIPExhaustion(); ex[f.laddr] != 0 {
		t.Errorf("local IP exhaustion %v after ipvsadm -Z, want 0", ex)
	}
	// The held connections still work, on their own ports.
	for i := 0; i < 4; i++ {
		p := e.clientPkt(f, loadbalancer.TCP, uint16(40000+i), 80, "A")
		if port := srcOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Port(); !used[port] {
			t.Errorf("connection %d moved to port %d", i, port)
		}
	}
}

// TestTableSwapUnderTraffic replaces the reals again and again while new
// flows arrive: every flow must reach a real of the old or the new set,
// never a half-written table.
func TestTableSwapUnderTraffic(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	setA, setB := reals(f, 1, 1, 1), reals(f, 0, 0, 0, 1, 1, 1)[3:]
	e.addService(key, loadbalancer.MaglevHash, f.laddr, setA...)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			set := setA
			if i%2 == 1 {
				set = setB
			}
			if err := e.dp.SetReals(key, set); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	got := e.newFlows(f, 1000, 10000)
	close(stop)
	wg.Wait()
	for i, r := range got {
		if r.As4()[3] < 1 || r.As4()[3] > 6 {
			t.Fatalf("flow %d went to %s", i, r)
		}
	}
	drops, _ := e.dp.Drops()
	if drops[DropNoReal] != 0 {
		t.Errorf("%d flows found no real during swaps", drops[DropNoReal])
	}
}

// onePortEnv is a test environment whose local port range is the one
// port 3000, with the settings it has.
func onePortEnv(t *testing.T) (*testEnv, loadbalancer.Settings) {
	t.Helper()
	e := newEnv(t, Options{})
	s := loadbalancer.DefaultSettings()
	s.LocalPortMin, s.LocalPortMax = 3000, 3000
	if err := e.dp.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	return e, s
}

// TestLocalPortHeldPastTimeout checks the grace a reverse entry holds its
// local port for past its timeout (XLB_CT_HOLD_PERIOD, 16 s): a forward
// entry refreshes its reverse one only once per period, so a port is
// reused only when the connection is surely over.
func TestLocalPortHeldPastTimeout(t *testing.T) {
	const holdPeriod = 16
	e, s := onePortEnv(t)
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.UDP}, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	e.expect(e.clientPkt(f, loadbalancer.UDP, 40000, 80, "").frame(t), XDPRedirect, nil)

	revKey := keyOf(netip.AddrPortFrom(f.real(1), 80), netip.AddrPortFrom(f.laddr, 3000), loadbalancer.UDP)
	age := func(seconds uint32) {
		t.Helper()
		now, _ := monotonicSeconds()
		e.ctEntry(f, revKey).LastSeen = now - seconds
	}
	udpTimeout := uint32(s.UDPTimeout / time.Second)

	age(udpTimeout + holdPeriod/2) // expired, within the grace: still held
	e.expect(e.clientPkt(f, loadbalancer.UDP, 40001, 80, "").frame(t), XDPDrop, nil)
	age(udpTimeout + holdPeriod + 2) // past the grace: free again
	out := e.expect(e.clientPkt(f, loadbalancer.UDP, 40001, 80, "").frame(t), XDPRedirect, nil)
	if port := srcOf(t, out).Port(); port != 3000 {
		t.Errorf("new connection got port %d, want the freed 3000", port)
	}
}

// TestLocalPortFreedWithItsConnection: once both entries of a connection
// are past their timeouts (and the reuse grace), its local port is free,
// without the 16 s hold a reverse entry keeps while its forward entry may
// still live: a closed connection gives its port back within seconds.
func TestLocalPortFreedWithItsConnection(t *testing.T) {
	e, s := onePortEnv(t)
	f := families[0]
	real1, _ := e.oneRealService(f, loadbalancer.TCP)
	for _, flags := range []string{"S", "A", "FA"} {
		e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 80, flags).frame(t), XDPRedirect, nil)
	}
	local := netip.AddrPortFrom(f.laddr, 3000)
	finAck := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "FA", src: real1, dst: local}
	e.expect(finAck.frame(t), XDPRedirect, nil)

	fwdKey := keyOf(netip.AddrPortFrom(f.client, 40000), netip.AddrPortFrom(f.vip, 80), loadbalancer.TCP)
	revKey := keyOf(real1, local, loadbalancer.TCP)
	fin := uint32(s.TCPFinTimeout / time.Second)
	// within the reuse grace after the timeout: still held
	e.age(f, fwdKey, fin+1)
	e.age(f, revKey, fin+1)
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40001, 80, "S").frame(t), XDPDrop, nil)
	// past it, both entries: the port is free, long before the 16 s hold
	e.age(f, fwdKey, ctReuseGrace+1)
	e.age(f, revKey, ctReuseGrace+1)
	out := e.expect(e.clientPkt(f, loadbalancer.TCP, 40001, 80, "S").frame(t), XDPRedirect, nil)
	if port := srcOf(t, out).Port(); port != 3000 {
		t.Errorf("new connection got port %d, want the freed 3000", port)
	}
	if fin+ctReuseGrace+2 >= fin+ctHoldPeriod {
		t.Fatalf("the test ages %d s: not shorter than the hold", fin+ctReuseGrace+2)
	}
}

// TestServiceOf256LocalIPs: a service with the most local IPs it may have
// (256, more than a byte counts) spreads new connections over every one
// of them in turn.
func TestServiceOf256LocalIPs(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	var laddrs []netip.Addr
	for i := range loadbalancer.MaxServiceLocalIPs {
		laddrs = append(laddrs, netip.AddrFrom4([4]byte{10, 0, 4 + byte(i/250), byte(i%250 + 1)}))
	}
	if err := e.dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.RoundRobin, LocalIPs: laddrs}); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.SetReals(key, reals(f, 1)); err != nil {
		t.Fatal(err)
	}
	used := map[netip.Addr]int{}
	for i := range 2 * len(laddrs) {
		out := e.expect(e.clientPkt(f, loadbalancer.TCP, uint16(20000+i), 80, "S").frame(t), XDPRedirect, nil)
		used[srcOf(t, out).Addr()]++
	}
	if len(used) != len(laddrs) {
		t.Fatalf("%d SYNs left from %d local IPs, want all %d", 2*len(laddrs), len(used), len(laddrs))
	}
	for _, a := range laddrs {
		if used[a] != 2 {
			t.Fatalf("local IP %s took %d connections, want 2 (in turn)", a, used[a])
		}
	}
}
