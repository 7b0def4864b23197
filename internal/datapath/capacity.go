// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// Capacities are how many services, reals and local IPs the maps indexed
// by their ids hold (max_services, max_reals, max_local_ips); a zero one
// keeps the object's size (XLB_MAX_SERVICES, XLB_MAX_REALS,
// XLB_MAX_LADDRS).
type Capacities struct {
	Services, Reals, LocalIPs uint32
}

// CapacityError says that the maps indexed by service, real or local IP
// id, pinned by a previous run, hold another number of them than the
// configuration asks for. Other maps name these by id, so changing a
// capacity replaces every pinned map (Options.DropIncompatible).
type CapacityError struct {
	PinPath string
	Setting string // max_services, max_reals or max_local_ips
	What    string // services, reals or local IPs
	Have    uint32
	Want    uint32
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("the maps pinned in %s hold %d %s and the configuration asks for %d (%s): "+
		"start once with --drop-incompatible-maps to change it, which replaces every pinned map and resets every "+
		"connection, or keep %s at %d", e.PinPath, e.Have, e.What, e.Want, e.Setting, e.Setting, e.Have)
}

// capacityMaps are, for each capacity, the maps indexed by its ids; the
// first is the one whose pinned size Load compares.
var capacityMaps = []struct {
	setting, what string
	maps          []string
	of            func(Capacities) uint32
}{
	{"max_services", "services", []string{xlbMapServices, xlbMapSvcVips, xlbMapSchedTables, xlbMapSchedCursors, xlbMapSvcStats, xlbMapSvcNoLport},
		func(c Capacities) uint32 { return c.Services }},
	{"max_reals", "reals", []string{xlbMapReals, xlbMapRealStats, xlbMapRealNexthops},
		func(c Capacities) uint32 { return c.Reals }},
	{"max_local_ips", "local IPs", []string{xlbMapLaddrs, xlbMapLportCursors, xlbMapLaddrNoLport},
		func(c Capacities) uint32 { return c.LocalIPs }},
}

// setCapacities sizes the maps indexed by service, real and local IP id,
// and local_addrs for a VIP per service and the local IPs.
func setCapacities(spec *ebpf.CollectionSpec, c Capacities) {
	for _, cm := range capacityMaps {
		if n := cm.of(c); n > 0 {
			for _, name := range cm.maps {
				spec.Maps[name].MaxEntries = n
			}
		}
	}
	spec.Maps[xlbMapLocalAddrs].MaxEntries = spec.Maps[xlbMapServices].MaxEntries + spec.Maps[xlbMapLaddrs].MaxEntries
}

// checkCapacities compares the pinned maps' capacities with spec's:
// another one is a *CapacityError unless drop is set (the layout check
// then replaces every pinned map, as the resized maps' stamps differ).
func checkCapacities(spec *ebpf.CollectionSpec, pinPath string, drop bool) error {
	if drop {
		return nil
	}
	for _, cm := range capacityMaps {
		name := cm.maps[0]
		have, err := pinnedEntries(filepath.Join(pinPath, name))
		if err != nil {
			return err
		}
		if want := spec.Maps[name].MaxEntries; have != 0 && have != want {
			return &CapacityError{PinPath: pinPath, Setting: cm.setting, What: cm.what, Have: have, Want: want}
		}
	}
	return nil
}
