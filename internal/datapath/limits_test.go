// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestLimitsOfLoadedMaps: the capacities a loaded data path reports are
// those the compiled object declares, and none is 0.
func TestLimitsOfLoadedMaps(t *testing.T) {
	requireRoot(t)
	spec, err := SpecLimits()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Services == 0 || spec.VIPs == 0 || spec.Reals == 0 || spec.LocalIPs == 0 {
		t.Fatalf("spec limits %+v: none may be 0", spec)
	}
	dp, err := Load(Options{CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	got := dp.Limits()
	if want := loadbalancer.DefaultConnTableSizes(); got.ConnTable != want {
		t.Errorf("loaded connection tables %+v, want the default sizes %+v", got.ConnTable, want)
	}
	if got.ConnTable = spec.ConnTable; got != spec {
		t.Errorf("loaded limits %+v, the object's %+v", got, spec)
	}
}

// manyReals returns n reals of distinct IPv4 addresses, port 80.
func manyReals(n int) []loadbalancer.Real {
	out := make([]loadbalancer.Real, n)
	for i := range out {
		out[i] = loadbalancer.Real{Addr: netip.AddrFrom4([4]byte{10, 77, byte(i >> 8), byte(i)}), Port: 80, Weight: 1}
	}
	return out
}

// TestSetRealsFailureKeepsRecords fails SetReals half way (the real ids
// run out at its second new real, after it rewrote a kept real's weight
// and gave the first new real an id): the reals map must hold the
// records it held before, so that the pinned maps and the registry
// agree and a restarted daemon reads back the list the failed call left,
// the old one.
func TestSetRealsFailureKeepsRecords(t *testing.T) {
	requireRoot(t)
	dir := pinDir(t)
	dp, err := Load(Options{PinPath: dir, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { dp.Close() }()
	f := families[0]
	a := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	b := loadbalancer.ServiceKey{VIP: f.vip, Port: 81, Proto: loadbalancer.TCP}
	for _, k := range []loadbalancer.ServiceKey{a, b} {
		if err := dp.AddService(loadbalancer.Service{Key: k, Scheduler: loadbalancer.RoundRobin, LocalIPs: []netip.Addr{f.laddr}}); err != nil {
			t.Fatal(err)
		}
	}
	before := reals(f, 1)
	if err := dp.SetReals(a, before); err != nil {
		t.Fatal(err)
	}
	filler := manyReals(dp.Limits().Reals - 2) // one id left
	if err := dp.SetReals(b, filler); err != nil {
		t.Fatal(err)
	}

	asked := reals(f, 5, 1, 1) // real 1 reweighted, reals 2 and 3 new
	if err := dp.SetReals(a, asked); err == nil {
		t.Fatal("SetReals took two ids with one free")
	}
	if got, _ := dp.Reals(a); !reflect.DeepEqual(got, before) {
		t.Fatalf("after the failure the registry says %+v, want %+v", got, before)
	}
	if err := dp.Close(); err != nil {
		t.Fatal(err)
	}
	dp, err = Load(Options{PinPath: dir, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := dp.Reals(a); !reflect.DeepEqual(got, before) {
		t.Errorf("read back from the maps, the reals of %s are %+v, want %+v", a, got, before)
	}
	if got, _ := dp.Reals(b); len(got) != len(filler) {
		t.Errorf("read back from the maps, %s has %d reals, want %d", b, len(got), len(filler))
	}
	// and the id the failed call gave back serves the next real
	if err := dp.SetReals(a, reals(f, 1, 1)); err != nil {
		t.Errorf("the last free id: %v", err)
	}
}
