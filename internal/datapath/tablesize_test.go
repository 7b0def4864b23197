// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestConnsOfSlots: the size a pinned table was created for is read back
// exactly from its number of slots, for every size near the rounding.
func TestConnsOfSlots(t *testing.T) {
	for _, c := range []uint32{16, 17, 18, 19, 20, 21, 1000, 1000001, DefaultConns4, DefaultConns6, loadbalancer.MaxConnTableSize} {
		if got := connsOfSlots(CtSlots(c) + ctProbe); got != c {
			t.Errorf("connsOfSlots(CtSlots(%d)) = %d", c, got)
		}
	}
}

// TestResizePinnedTable: a pinned table keeps its connections and its
// size. Loading it with another size is a ResizeError that names both
// sizes; with DropIncompatible it is replaced by an empty table of the
// new size, and the other family's table is kept.
func TestResizePinnedTable(t *testing.T) {
	dir := pinDir(t)
	pinOneConnection(t, Options{PinPath: dir, Conns4: 1000, Conns6: 500})

	same, err := Load(Options{PinPath: dir, CPUs: 1, Conns4: 1000, Conns6: 500})
	if err != nil {
		t.Fatalf("load with the same sizes: %v", err)
	}
	if n := countEntries(t, same); n != 2 {
		t.Errorf("the pinned table holds %d entries after a reload, want the connection's 2", n)
	}
	same.Close()

	_, err = Load(Options{PinPath: dir, CPUs: 1, Conns4: 2000, Conns6: 500})
	var re *ResizeError
	if !errors.As(err, &re) || re.Family != FamilyIPv4 || re.Have != 1000 || re.Want != 2000 ||
		!strings.Contains(err.Error(), "--drop-incompatible-maps") {
		t.Fatalf("load with another IPv4 size: %v, want a ResizeError from 1000 to 2000 connections", err)
	}

	dp, err := Load(Options{PinPath: dir, CPUs: 1, Conns4: 2000, Conns6: 500, DropIncompatible: true})
	if err != nil {
		t.Fatalf("resize with DropIncompatible: %v", err)
	}
	defer dp.Close()
	sizes := dp.ConnTableSizes()
	if sizes[0].Conns != 2000 || sizes[0].Slots != CtSlots(2000)+ctProbe || sizes[1].Conns != 500 {
		t.Errorf("sizes after the resize: %+v", sizes)
	}
	if got := dp.DroppedMaps(); len(got) != 1 || got[0] != "ct4" {
		t.Errorf("DroppedMaps = %v, want [ct4]", got)
	}
	if n := countEntries(t, dp); n != 0 {
		t.Errorf("the resized table holds %d entries, want 0", n)
	}
	if l := dp.Limits().ConnTable; l != (loadbalancer.ConnTableSizes{IPv4: 2000, IPv6: 500}) {
		t.Errorf("Limits().ConnTable = %+v", l)
	}
}

// TestTablesBeyondMemory: tables larger than the machine's available
// memory are refused before anything is created, with what they need and
// what there is.
func TestTablesBeyondMemory(t *testing.T) {
	requireRoot(t)
	avail, err := MemAvailable()
	if err != nil {
		t.Fatal(err)
	}
	// the largest IPv6 table takes 102.4 GiB; a machine with that much
	// available makes this test meaningless
	if ConnTableBytes(true, loadbalancer.MaxConnTableSize) <= avail {
		t.Fatalf("MemAvailable is %d bytes: more than the largest table needs", avail)
	}
	_, err = Load(Options{CPUs: 1, Conns6: loadbalancer.MaxConnTableSize})
	var me *MemoryError
	if !errors.As(err, &me) || me.Available == 0 || len(me.Tables) != 2 ||
		!strings.Contains(err.Error(), "ipv6 268435456 connections 104857.6 MiB") || !strings.Contains(err.Error(), "MemAvailable") {
		t.Fatalf("load with a 102.4 GiB IPv6 table: %v, want a MemoryError that names it", err)
	}
}

// countEntries counts the entries of both tables, both directions.
func countEntries(t *testing.T, dp *Datapath) int {
	t.Helper()
	n := 0
	if err := dp.Conns(func(loadbalancer.ConnEntry) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLayoutDropsEverythingForAnIDMap: when a map other than a connection
// table has another layout (the services map, say: local IPs per service
// grew), DropIncompatible replaces every pinned map, since the others
// name its entries by id: no service, no connection is left to be
// misread.
func TestLayoutDropsEverythingForAnIDMap(t *testing.T) {
	dir := pinDir(t)
	pinOneConnection(t, Options{PinPath: dir})
	stamps, err := ebpf.LoadPinnedMap(filepath.Join(dir, layoutMapName), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stamps.Close()
	var name [layoutKeySize]byte
	copy(name[:], xlbMapServices)
	if err := stamps.Put(name, uint64(12345)); err != nil {
		t.Fatal(err)
	}
	dp, err := Load(Options{PinPath: dir, CPUs: 1, DropIncompatible: true})
	if err != nil {
		t.Fatalf("load with DropIncompatible: %v", err)
	}
	defer dp.Close()
	dropped := dp.DroppedMaps()
	for _, m := range []string{xlbMapServices, xlbMapReals, xlbMapLaddrs, xlbMapCt4, xlbMapCt6, xlbMapSvcVips} {
		if !slices.Contains(dropped, m) {
			t.Errorf("DroppedMaps = %v: %s is missing", dropped, m)
		}
	}
	if got := dp.Services(); len(got) != 0 {
		t.Errorf("services after the drop: %+v, want none", got)
	}
	if n := countEntries(t, dp); n != 0 {
		t.Errorf("the connection tables hold %d entries after the drop, want 0", n)
	}
}
