// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func TestServiceValidation(t *testing.T) {
	e := newEnv(t, Options{})
	v4 := netip.MustParseAddr("10.0.0.10")
	key := loadbalancer.ServiceKey{VIP: v4, Port: 80, Proto: loadbalancer.TCP}
	good := loadbalancer.Service{Key: key, Scheduler: loadbalancer.RoundRobin, LocalIPs: []netip.Addr{laddr4}}
	for _, tc := range []struct {
		name string
		have loadbalancer.Service
	}{
		{"no vip", loadbalancer.Service{Key: loadbalancer.ServiceKey{Port: 80, Proto: loadbalancer.TCP}, LocalIPs: good.LocalIPs}},
		{"bad protocol", loadbalancer.Service{Key: loadbalancer.ServiceKey{VIP: v4, Port: 80, Proto: 1}, LocalIPs: good.LocalIPs}},
		{"unknown scheduler", loadbalancer.Service{Key: key, Scheduler: 9, LocalIPs: good.LocalIPs}},
		{"persistence prefix beyond the address", loadbalancer.Service{Key: key, LocalIPs: []netip.Addr{laddr4}, Persistent: 60, PersistPrefix: 33}},
		{"unknown scheduler", loadbalancer.Service{Key: key, LocalIPs: []netip.Addr{laddr4}, Scheduler: 9}},
		{"local IP of the other family", loadbalancer.Service{Key: key, LocalIPs: []netip.Addr{laddr6}}},
		{"local IP twice", loadbalancer.Service{Key: key, LocalIPs: []netip.Addr{laddr4, laddr4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.dp.AddService(tc.have); err == nil {
				t.Error("accepted")
			}
			if len(e.dp.Services()) != 0 {
				t.Error("a rejected service was half added")
			}
		})
	}
	if err := e.dp.AddService(good); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.AddService(good); !errors.Is(err, loadbalancer.ErrExists) {
		t.Errorf("adding it twice: %v, want ErrExists", err)
	}
	for _, tc := range []struct {
		name string
		have []loadbalancer.Real
	}{
		{"real of the other family", []loadbalancer.Real{{Addr: realAddr(true, 1), Port: 80, Weight: 1}}},
		{"weight too high", []loadbalancer.Real{{Addr: realAddr(false, 1), Port: 80, Weight: loadbalancer.MaxWeight + 1}}},
		{"real twice", []loadbalancer.Real{{Addr: realAddr(false, 1), Port: 80, Weight: 1}, {Addr: realAddr(false, 1), Port: 80, Weight: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.dp.SetReals(key, tc.have); err == nil {
				t.Error("accepted")
			}
			if r, _ := e.dp.Reals(key); len(r) != 0 {
				t.Errorf("rejected reals half applied: %v", r)
			}
		})
	}
	zeroPort := loadbalancer.ServiceKey{VIP: v4, Proto: loadbalancer.TCP}
	if err := e.dp.AddService(loadbalancer.Service{Key: zeroPort, LocalIPs: good.LocalIPs}); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.SetReals(zeroPort, []loadbalancer.Real{{Addr: realAddr(false, 1), Port: 8080, Weight: 1}}); err == nil {
		t.Error("a port-0 service took a real with a port")
	}
	if err := e.dp.SetReals(loadbalancer.ServiceKey{VIP: v4, Port: 81, Proto: loadbalancer.TCP}, nil); !errors.Is(err, loadbalancer.ErrNotFound) {
		t.Errorf("reals of a missing service: %v, want ErrNotFound", err)
	}
}

func TestRemoveService(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	p := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
	e.expect(p.frame(t), XDPRedirect, nil)
	if err := e.dp.RemoveService(key); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.RemoveService(key); !errors.Is(err, loadbalancer.ErrNotFound) {
		t.Errorf("removing it twice: %v, want ErrNotFound", err)
	}
	fresh := e.clientPkt(f, loadbalancer.TCP, 40001, 80, "S")
	e.expect(fresh.frame(t), XDPPass, fresh.frame(t))
	// added again, it balances again
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	e.expect(fresh.frame(t), XDPRedirect, nil)
}

func TestConnsListsBothEntries(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[1]
	real1, local := e.oneRealService(f, loadbalancer.UDP)
	p := e.clientPkt(f, loadbalancer.UDP, 40000, 80, "")
	e.expect(p.frame(t), XDPRedirect, nil)
	got := map[bool]loadbalancer.ConnEntry{}
	err := e.dp.Conns(func(c loadbalancer.ConnEntry) bool { got[c.Reverse] = c; return true })
	if err != nil {
		t.Fatal(err)
	}
	fwd, rev := got[false], got[true]
	if fwd.From != p.src || fwd.To != p.dst || fwd.Peer != local || fwd.State != loadbalancer.StateUDP || fwd.Proto != loadbalancer.UDP {
		t.Errorf("forward entry %+v, want %s -> %s via %s", fwd, p.src, p.dst, local)
	}
	if rev.From != real1 || rev.To != local || rev.Peer != p.src {
		t.Errorf("reverse entry %+v, want %s -> %s for %s", rev, real1, local, p.src)
	}
	if fwd.Idle > 2*time.Second {
		t.Errorf("forward entry idle for %v", fwd.Idle)
	}
	st, err := e.dp.Status()
	if err != nil {
		t.Fatal(err)
	}
	if r := st[0].Reals[0]; r.InactiveConns != 1 || r.ActiveConns != 0 {
		t.Errorf("real has %d active, %d inactive connections, want 0 and 1 (UDP)", r.ActiveConns, r.InactiveConns)
	}
	if err := e.dp.FlushConns(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := e.dp.Conns(func(loadbalancer.ConnEntry) bool { n++; return true }); err != nil || n != 0 {
		t.Errorf("after flush: %d entries, %v", n, err)
	}
}

func TestAttachDetach(t *testing.T) {
	e := newEnv(t, Options{})
	for _, mode := range []loadbalancer.AttachMode{loadbalancer.ModeNative, loadbalancer.ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			var err error
			e.inNS(func() { err = e.dp.Attach("xcp", mode) })
			if err != nil {
				t.Fatal(err)
			}
			e.inNS(func() { err = e.dp.Attach("xcp", mode) })
			if !errors.Is(err, loadbalancer.ErrExists) {
				t.Errorf("attaching twice: %v, want ErrExists", err)
			}
			e.inNS(func() { err = e.dp.Detach("xcp") })
			if err != nil {
				t.Fatal(err)
			}
			e.inNS(func() { err = e.dp.Detach("xcp") })
			if !errors.Is(err, loadbalancer.ErrNotFound) {
				t.Errorf("detaching twice: %v, want ErrNotFound", err)
			}
		})
	}
	var err error
	e.inNS(func() { err = e.dp.Attach("nosuchif0", loadbalancer.ModeGeneric) })
	if err == nil {
		t.Error("attached to an interface that does not exist")
	}
}

// TestPinnedMapsSurviveReload loads the data path twice on the same bpffs
// directory, as a restarted daemon would: the connection made before is
// still there and keeps its real and local port.
func TestPinnedMapsSurviveReload(t *testing.T) {
	dir := pinDir(t)

	e := newEnv(t, Options{PinPath: dir})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	mhKey := loadbalancer.ServiceKey{VIP: f.vip, Port: 443, Proto: loadbalancer.TCP}
	before := reals(f, 1, 1, 1)
	before[2].Weight = 0 // a drained real is not in the table, but is the service's
	e.addService(key, loadbalancer.RoundRobin, f.laddr, before...)
	if err := e.dp.AddService(loadbalancer.Service{Key: mhKey, Scheduler: loadbalancer.MaglevHash, LocalIPs: []netip.Addr{f.laddr}, MaglevSize: 251}); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.SetReals(mhKey, reals(f, 3, 1)); err != nil {
		t.Fatal(err)
	}
	held := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
	e.expect(e.clientPkt(f, loadbalancer.TCP, 39999, 80, "S").frame(t), XDPRedirect, nil) // takes real 1
	first := e.expect(held.frame(t), XDPRedirect, nil)                                    // real 2
	services := e.dp.Services()
	if err := e.dp.Close(); err != nil {
		t.Fatal(err)
	}

	dp, err := Load(Options{PinPath: dir, CPUs: 1})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	e.dp = dp
	t.Cleanup(func() { dp.Close() })
	n := 0
	if err := dp.Conns(func(loadbalancer.ConnEntry) bool { n++; return true }); err != nil || n != 4 {
		t.Fatalf("after reload: %d connection entries (%v), want 4", n, err)
	}
	// the new owner finds the services, local IPs, reals and weights
	if got := dp.Services(); !reflect.DeepEqual(got, services) {
		t.Fatalf("after reload the services are\n%+v\nwant\n%+v", got, services)
	}
	for k, want := range map[loadbalancer.ServiceKey][]loadbalancer.Real{key: before, mhKey: reals(f, 3, 1)} {
		if got, err := dp.Reals(k); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after reload the reals of %s are %+v (%v), want %+v", k, got, err, want)
		}
	}
	for _, ifc := range []int{e.clientIf.Index, e.realIf.Index} {
		e.inNS(func() { err = dp.AddRedirectTarget(ifc) })
		if err != nil {
			t.Fatal(err)
		}
	}
	// and applies a different list: a real ahead of the others, real 1
	// removed. The held connection stays on real 2 (it keeps its id).
	changed := append([]loadbalancer.Real{{Addr: f.real(9), Port: 80, Weight: 1}}, before[1:]...)
	if err := dp.SetReals(key, changed); err != nil {
		t.Fatal(err)
	}
	held.flags = "A"
	after := e.expect(held.frame(t), XDPRedirect, nil)
	if dstOf(t, after) != dstOf(t, first) || srcOf(t, after) != srcOf(t, first) {
		t.Errorf("after reload the connection goes %s -> %s, before %s -> %s",
			srcOf(t, after), dstOf(t, after), srcOf(t, first), dstOf(t, first))
	}
	// the new real got a fresh id, not a used one: new connections reach it
	if fresh := dstOf(t, e.expect(e.clientPkt(f, loadbalancer.TCP, 40001, 80, "S").frame(t), XDPRedirect, nil)).Addr(); fresh != f.real(9) && fresh != f.real(2) {
		t.Errorf("a new connection went to %s, want real 9 or real 2", fresh)
	}
}
