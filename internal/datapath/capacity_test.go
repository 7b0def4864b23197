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
	dp, err := Load(Options{PinPath: dir, CPUs: 1, LocalIPs: want})
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
