// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestLocalIPCapacity: Options.LocalIPs sizes every map indexed by local
// IP id (the VIPs' room in local_addrs stays), a service takes ids up
// to it; pinned maps of another capacity are a CapacityError naming
// both, and DropIncompatible replaces every pinned map.
func TestLocalIPCapacity(t *testing.T) {
	dir := pinDir(t)
	spec, err := SpecLimits()
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(spec.LocalIPs * 2)
	dp, err := Load(Options{PinPath: dir, CPUs: 1, Capacities: Capacities{LocalIPs: want}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dp.Limits(); got.LocalIPs != int(want) || got.VIPs != spec.VIPs {
		t.Errorf("limits %+v, want %d local IPs and the object's %d VIPs", got, want, spec.VIPs)
	}
	for _, m := range []struct {
		name string
		n    uint32
	}{{"lport_cursors", dp.objs.LportCursors.MaxEntries()}, {"laddr_no_lport", dp.objs.LaddrNoLport.MaxEntries()}} {
		if m.n != want {
			t.Errorf("%s holds %d, want %d", m.name, m.n, want)
		}
	}
	// a service's local IPs take ids beyond the object's capacity
	key := loadbalancer.ServiceKey{VIP: vip4, Port: 80, Proto: loadbalancer.TCP}
	for i := 0; i < spec.LocalIPs/loadbalancer.MaxServiceLocalIPs+1; i++ {
		var ips []netip.Addr
		for j := 0; j < loadbalancer.MaxServiceLocalIPs; j++ {
			ips = append(ips, netip.AddrFrom4([4]byte{10, 90 + byte(i), byte(j >> 8), byte(j)}))
		}
		key.Port = uint16(80 + i)
		if err := dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.RoundRobin, LocalIPs: ips}); err != nil {
			t.Fatalf("service %d of %d local IPs: %v", i, len(ips), err)
		}
	}
	dp.Close()

	_, err = Load(Options{PinPath: dir, CPUs: 1})
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Have != want || ce.Want != uint32(spec.LocalIPs) || !strings.Contains(err.Error(), "max_local_ips") {
		t.Fatalf("load with the object's capacity over pins of %d: %v, want a CapacityError", want, err)
	}
	dp, err = Load(Options{PinPath: dir, CPUs: 1, DropIncompatible: true})
	if err != nil {
		t.Fatalf("with DropIncompatible: %v", err)
	}
	defer dp.Close()
	if got := dp.Limits().LocalIPs; got != spec.LocalIPs {
		t.Errorf("after the drop the data path holds %d local IPs, want %d", got, spec.LocalIPs)
	}
	if len(dp.DroppedMaps()) < 5 {
		t.Errorf("dropped %v: every pinned map goes, as the others name local IPs by id", dp.DroppedMaps())
	}
}

// TestServiceAndRealCapacity: Capacities sizes every map indexed by
// service and real id, local_addrs has a VIP's room per service, more
// services than the object's size go in (one batch), and pinned maps of
// another capacity are a CapacityError naming the setting.
func TestServiceAndRealCapacity(t *testing.T) {
	dir := pinDir(t)
	spec, err := SpecLimits()
	if err != nil {
		t.Fatal(err)
	}
	services, reals := uint32(spec.Services*2), uint32(spec.Reals*2)
	dp, err := Load(Options{PinPath: dir, CPUs: 1, Capacities: Capacities{Services: services, Reals: reals}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dp.Limits(); got.Services != int(services) || got.VIPs != int(services) || got.Reals != int(reals) || got.LocalIPs != spec.LocalIPs {
		t.Errorf("limits %+v, want %d services and VIPs, %d reals, the object's %d local IPs", got, services, reals, spec.LocalIPs)
	}
	loaded := dp.capacityMapsByName()
	for _, cm := range capacityMaps[:2] {
		for _, name := range cm.maps {
			if n, want := loaded[name].MaxEntries(), cm.of(Capacities{Services: services, Reals: reals}); n != want {
				t.Errorf("%s holds %d, want %d", name, n, want)
			}
		}
	}
	n := spec.Services + 10
	err = dp.Batch(func() error {
		for i := range n {
			key := loadbalancer.ServiceKey{VIP: vip4, Port: uint16(1000 + i), Proto: loadbalancer.TCP}
			if err := dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.RoundRobin}); err != nil {
				return err
			}
			if err := dp.SetReals(key, []loadbalancer.Real{{Addr: netip.AddrFrom4([4]byte{10, 91, byte(i >> 8), byte(i)}), Port: 80, Weight: 1}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%d services beyond the object's %d: %v", n, spec.Services, err)
	}
	dp.Close()

	_, err = Load(Options{PinPath: dir, CPUs: 1, Capacities: Capacities{Reals: reals}})
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Setting != "max_services" || ce.Have != services || !strings.Contains(err.Error(), "max_services") {
		t.Fatalf("load with the object's service capacity over pins of %d: %v, want a CapacityError", services, err)
	}
}
