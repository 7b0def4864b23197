// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/sched"
)

// rebuildRegistry reads back what pinned maps hold from a previous run:
// services with their ids, local IPs, and the reals each service owns
// with their weights (from the control plane's record in the reals
// entries). Connections name services, reals and local IPs by id, so a
// restarted control plane must keep every id: a real that moved to
// another id would receive its neighbour's connections. On fresh maps it
// finds nothing.
func (d *Datapath) rebuildRegistry() error {
	r := &d.reg
	laddrByID := map[uint32]netip.Addr{}
	var laddrUsed []uint32
	var la xlbLaddr
	for id := range r.laddrIDs.max {
		if err := d.objs.Laddrs.Lookup(id, &la); err != nil {
			return fmt.Errorf("read laddrs[%d]: %w", id, err)
		}
		if la.Family == 0 {
			continue
		}
		ip := fromAddr(la.Addr.W, la.Family)
		laddrByID[id] = ip
		r.localIPs[ip] = &localIP{id: id}
		laddrUsed = append(laddrUsed, id)
	}

	byID := map[uint32]*serviceState{}
	var key xlbServiceKey
	var val xlbService
	it := d.objs.Services.Iterate()
	for it.Next(&key, &val) {
		k := loadbalancer.ServiceKey{VIP: fromAddr(key.Vip.W, key.Family), Port: ntohs(key.Port), Proto: loadbalancer.Proto(key.Proto)}
		st := &serviceState{id: val.Id, svc: loadbalancer.Service{Key: k, Scheduler: loadbalancer.Scheduler(val.Sched), Persistent: val.PersistTimeout,
			ClientAddress: clientAddressOf(val.Flags), SynProxy: val.Flags&svcFlagSynProxy != 0}}
		if val.PersistTimeout > 0 && int(val.PersistPrefix) < k.VIP.BitLen() {
			st.svc.PersistPrefix = val.PersistPrefix
		}
		for _, lid := range val.LaddrIds[:min(int(val.LaddrCount), len(val.LaddrIds))] {
			ip, ok := laddrByID[lid]
			if !ok {
				return fmt.Errorf("service %s names local IP id %d, which has no entry", k, lid)
			}
			st.svc.LocalIPs = append(st.svc.LocalIPs, ip)
			st.laddrIDs = append(st.laddrIDs, lid)
			r.localIPs[ip].refs++
		}
		size, err := d.tableSize(st.id)
		if err != nil {
			return err
		}
		if st.svc.Scheduler == loadbalancer.MaglevHash || st.svc.Scheduler == loadbalancer.SourceHash {
			if size > 1 && size != sched.DefaultMaglevSize {
				st.svc.MaglevSize = size
			}
		}
		r.services[k] = st
		r.vips[k.VIP]++
		byID[st.id] = st
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read services: %w", err)
	}

	var realUsed, realWritten []uint32
	var rv xlbReal
	for id := range r.realIDs.max {
		if err := d.objs.Reals.Lookup(id, &rv); err != nil {
			return fmt.Errorf("read reals[%d]: %w", id, err)
		}
		if rv.Family == 0 {
			continue
		}
		realWritten = append(realWritten, id)
		st, ok := byID[rv.SvcId]
		if rv.Flags&realFInUse == 0 || !ok {
			continue // a freed id; its connections may still use it
		}
		st.reals = append(st.reals, realState{id: id, real: loadbalancer.Real{Addr: fromAddr(rv.Addr.W, rv.Family), Port: ntohs(rv.Port), Weight: rv.Weight},
			down: rv.Flags&realFDown != 0, unresolved: rv.Flags&realFUnresolved != 0})
		realUsed = append(realUsed, id)
	}

	svcUsed := make([]uint32, 0, len(byID))
	for id := range byID {
		svcUsed = append(svcUsed, id)
	}
	r.svcIDs.resume(svcUsed, svcUsed)
	r.realIDs.resume(realWritten, realUsed)
	r.laddrIDs.resume(laddrUsed, laddrUsed) // local IP ids are never reused
	return nil
}

// tableSize returns the number of slots of a service's schedule table
// (0 when it has none).
func (d *Datapath) tableSize(svcID uint32) (uint32, error) {
	var inner *ebpf.Map
	if err := d.objs.SchedTables.Lookup(svcID, &inner); err != nil {
		return 0, nil // no table installed
	}
	defer inner.Close()
	var n uint32
	if err := inner.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("read schedule table of service %d: %w", svcID, err)
	}
	return n, nil
}

// resume sets an allocator to where a previous run left it: ids up to
// the highest written one are taken, and those written but not in use
// are free again (lowest first).
func (a *idAlloc) resume(written, inUse []uint32) {
	a.next, a.free = 0, nil
	for _, id := range written {
		a.next = max(a.next, id+1)
	}
	used := make(map[uint32]bool, len(inUse))
	for _, id := range inUse {
		used[id] = true
	}
	for id := range a.next {
		if !used[id] {
			a.free = append(a.free, id)
		}
	}
}
