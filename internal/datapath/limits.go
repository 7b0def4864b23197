// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// limitsFrom computes the limits from the maps' sizes: each is the
// smallest size of the maps indexed by its ids (capacityMaps).
// local_addrs holds the VIPs and the local IPs, so the VIPs are what is
// left of it once every local IP has its entry (one per service).
func limitsFrom(size func(name string) uint32) loadbalancer.Limits {
	least := func(names []string) int {
		n := size(names[0])
		for _, name := range names[1:] {
			n = min(n, size(name))
		}
		return int(n)
	}
	l := loadbalancer.Limits{Services: least(capacityMaps[0].maps), Reals: least(capacityMaps[1].maps), LocalIPs: least(capacityMaps[2].maps)}
	l.VIPs = int(size(xlbMapLocalAddrs)) - l.LocalIPs
	return l
}

// Limits returns the capacities of the loaded maps (pinned maps keep the
// sizes they were created with).
func (d *Datapath) Limits() loadbalancer.Limits {
	maps := d.capacityMapsByName()
	l := limitsFrom(func(name string) uint32 { return maps[name].MaxEntries() })
	l.ConnTable = loadbalancer.ConnTableSizes{IPv4: d.conns[0], IPv6: d.conns[1]}
	return l
}

// capacityMapsByName are the loaded maps of capacityMaps and local_addrs.
func (d *Datapath) capacityMapsByName() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{
		xlbMapServices: d.objs.Services, xlbMapSvcVips: d.objs.SvcVips, xlbMapSchedTables: d.objs.SchedTables,
		xlbMapSchedCursors: d.objs.SchedCursors, xlbMapSvcStats: d.objs.SvcStats, xlbMapSvcNoLport: d.objs.SvcNoLport,
		xlbMapReals: d.objs.Reals, xlbMapRealStats: d.objs.RealStats, xlbMapRealNexthops: d.objs.RealNexthops,
		xlbMapLaddrs: d.objs.Laddrs, xlbMapLportCursors: d.objs.LportCursors, xlbMapLaddrNoLport: d.objs.LaddrNoLport,
		xlbMapLocalAddrs: d.objs.LocalAddrs,
	}
}

// SpecLimits returns the capacities the compiled object declares, without
// loading it: what a data path loaded with fresh maps has. The connection
// tables are sized at Load, so their sizes are left zero (not checked).
func SpecLimits() (loadbalancer.Limits, error) {
	spec, err := loadXlb()
	if err != nil {
		return loadbalancer.Limits{}, fmt.Errorf("load xlb object: %w", err)
	}
	return limitsFrom(func(name string) uint32 { return spec.Maps[name].MaxEntries }), nil
}

// HeldLocalIPs returns the local IPs the data path holds an id for,
// whether a service uses them now or not (ids of local IPs are not
// reused: see releaseLocalIPs), in address order.
func (d *Datapath) HeldLocalIPs() []netip.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]netip.Addr, 0, len(d.reg.localIPs))
	for a := range d.reg.localIPs {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
