// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func serviceMapKey(k loadbalancer.ServiceKey) xlbServiceKey {
	return xlbServiceKey{Vip: toAddr(k.VIP), Port: htons(k.Port), Proto: uint8(k.Proto), Family: familyOf(k.VIP)}
}

// AddService adds a service with no reals yet (new connections to it are
// dropped as no_real until SetReals gives it some).
func (d *Datapath) AddService(s loadbalancer.Service) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	if err := validateService(s); err != nil {
		return fmt.Errorf("add service %s: %w", s.Key, err)
	}
	if _, ok := d.reg.services[s.Key]; ok {
		return fmt.Errorf("add service %s: %w", s.Key, loadbalancer.ErrExists)
	}
	id, err := d.takeID(&d.reg.svcIDs)
	if err != nil {
		return fmt.Errorf("add service %s: %w", s.Key, err)
	}
	st := &serviceState{id: id, svc: s}
	// an id freed by a removed service starts its counters anew
	err = d.objs.SvcStats.Put(id, make([]xlbXlbCounters, d.cpus))
	if err == nil {
		err = d.zeroU64(d.objs.SvcNoLport, id)
	}
	if err == nil {
		err = d.writeService(st, nil)
	}
	if err != nil {
		d.reg.svcIDs.put(id)
		return fmt.Errorf("add service %s: %w", s.Key, err)
	}
	d.reg.services[s.Key] = st
	d.reg.vips[s.Key.VIP]++
	d.pend.timeouts = true
	if err := d.syncLocalAddrs(append([]netip.Addr{s.Key.VIP}, s.LocalIPs...)...); err != nil {
		return fmt.Errorf("add service %s: %w", s.Key, err)
	}
	return nil
}

// UpdateService changes a service's scheduler, local IPs or table size;
// its reals and connections stay.
func (d *Datapath) UpdateService(s loadbalancer.Service) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	if err := validateService(s); err != nil {
		return fmt.Errorf("update service %s: %w", s.Key, err)
	}
	st, ok := d.reg.services[s.Key]
	if !ok {
		return fmt.Errorf("update service %s: %w", s.Key, loadbalancer.ErrNotFound)
	}
	old := st.svc
	oldLaddrs := st.laddrIDs
	st.svc = s
	if err := d.writeService(st, st.reals); err != nil {
		st.svc = old
		return fmt.Errorf("update service %s: %w", s.Key, err)
	}
	d.releaseLocalIPs(oldLaddrs)
	if err := d.syncLocalAddrs(append(slices.Clone(old.LocalIPs), s.LocalIPs...)...); err != nil {
		return fmt.Errorf("update service %s: %w", s.Key, err)
	}
	if s.Timeouts != old.Timeouts {
		d.pend.timeouts = true
	}
	return nil
}

// validateService checks a service against the model and against what
// the running kernel can do.
func validateService(s loadbalancer.Service) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return CheckKernel(s)
}

// Service flags (enum xlb_svc_flags, from the object).
const (
	svcFlagTOA      = uint8(xlbXlbSvcFlagsXLB_SVC_F_TOA)
	svcFlagProxyV2  = uint8(xlbXlbSvcFlagsXLB_SVC_F_PROXY_V2)
	svcFlagSynProxy = uint8(xlbXlbSvcFlagsXLB_SVC_F_SYN_PROXY)
)

// serviceFlags is the flags byte of a service's entry.
func serviceFlags(s loadbalancer.Service) uint8 {
	var f uint8
	switch s.ClientAddress {
	case loadbalancer.ClientAddressTOA:
		f = svcFlagTOA
	case loadbalancer.ClientAddressProxyV2:
		f = svcFlagProxyV2
	}
	if s.SynProxy {
		f |= svcFlagSynProxy
	}
	return f
}

// clientAddressOf reads the client address way back from flags.
func clientAddressOf(flags uint8) loadbalancer.ClientAddress {
	switch {
	case flags&svcFlagProxyV2 != 0:
		return loadbalancer.ClientAddressProxyV2
	case flags&svcFlagTOA != 0:
		return loadbalancer.ClientAddressTOA
	}
	return loadbalancer.ClientAddressNone
}

// writeService writes everything a service entry refers to (local IPs,
// its key by id, its schedule table) before the entry itself, so that a
// packet that finds the entry finds all of it.
func (d *Datapath) writeService(st *serviceState, reals []realState) error {
	laddrIDs, err := d.acquireLocalIPs(st.svc.LocalIPs)
	if err != nil {
		return err
	}
	undo := func() { d.releaseLocalIPs(laddrIDs) }
	key := serviceMapKey(st.svc.Key)
	if err := d.objs.SvcVips.Put(st.id, key); err != nil {
		undo()
		return fmt.Errorf("write svc_vips[%d]: %w", st.id, err)
	}
	if err := d.swapTable(st.id, st.svc, reals); err != nil {
		undo()
		return err
	}
	val := xlbService{Id: st.id, Sched: uint8(st.svc.Scheduler), LaddrCount: uint16(len(laddrIDs)),
		PersistTimeout: st.svc.Persistent, Flags: serviceFlags(st.svc)}
	if st.svc.Persistent > 0 {
		val.PersistPrefix = st.svc.PersistBits()
	}
	copy(val.LaddrIds[:], laddrIDs)
	if err := d.objs.Services.Put(key, val); err != nil {
		undo()
		return fmt.Errorf("write services entry: %w", err)
	}
	st.laddrIDs = laddrIDs
	return nil
}

// Flags of local_addrs entries (enum xlb_addr_flags, from the object).
const (
	addrVIP   = uint32(xlbXlbAddrFlagsXLB_ADDR_VIP)
	addrLaddr = uint32(xlbXlbAddrFlagsXLB_ADDR_LADDR)
)

// syncLocalAddrs writes the local_addrs entry of each address as the
// registry now has it: VIP and/or local IP, or no entry at all.
func (d *Datapath) syncLocalAddrs(addrs ...netip.Addr) error {
	for _, a := range addrs {
		var flags uint32
		if d.reg.vips[a] > 0 {
			flags |= addrVIP
		}
		if _, ok := d.reg.localIPs[a]; ok || d.peerLocalIPs[a] {
			flags |= addrLaddr
		}
		key := xlbServiceKey{Vip: toAddr(a), Family: familyOf(a)}
		var err error
		if flags == 0 {
			if err = d.objs.LocalAddrs.Delete(key); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		} else {
			err = d.objs.LocalAddrs.Put(key, flags)
		}
		if err != nil {
			return fmt.Errorf("write local_addrs entry of %s: %w", a, err)
		}
	}
	d.pend.addrFilter = true
	return nil
}

// Size and hash of local_addr_filter (XLB_ADDR_FILTER_* in the data path).
const (
	addrFilterWords = 1024
	addrFilterMult  = 0x9E3779B1
)

func addrFilterBit(a xlbXlbAddr) uint32 {
	return ((a.W[0] ^ a.W[1] ^ a.W[2] ^ a.W[3]) * addrFilterMult) >> 16
}

// writeAddrFilter rebuilds local_addr_filter from the local_addrs map
// itself, so it holds exactly what the data path will find there.
func (d *Datapath) writeAddrFilter() error {
	var words [addrFilterWords]uint64
	var key xlbServiceKey
	var flags uint32
	iter := d.objs.LocalAddrs.Iterate()
	for iter.Next(&key, &flags) {
		bit := addrFilterBit(key.Vip)
		words[bit/64] |= 1 << (bit % 64)
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("read local_addrs: %w", err)
	}
	keys := make([]uint32, addrFilterWords)
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := d.objs.LocalAddrFilter.BatchUpdate(keys, words[:], nil); err != nil {
		return fmt.Errorf("write local_addr_filter: %w", err)
	}
	return nil
}

// RemoveService removes a service. Its connections are no longer
// forwarded; their entries age out of the connection table.
func (d *Datapath) RemoveService(k loadbalancer.ServiceKey) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endChange(&err)
	st, ok := d.reg.services[k]
	if !ok {
		return fmt.Errorf("remove service %s: %w", k, loadbalancer.ErrNotFound)
	}
	key := serviceMapKey(k)
	if err := d.objs.Services.Delete(key); err != nil {
		return fmt.Errorf("remove service %s: %w", k, err)
	}
	delete(d.reg.services, k)
	if d.reg.vips[k.VIP]--; d.reg.vips[k.VIP] == 0 {
		delete(d.reg.vips, k.VIP)
	}
	if err := d.clearTable(st.id); err != nil {
		return fmt.Errorf("remove service %s: %w", k, err)
	}
	d.releaseLocalIPs(st.laddrIDs)
	for _, r := range st.reals {
		d.freeReal(r)
	}
	d.reg.svcIDs.hold(st.id)
	if err := d.syncLocalAddrs(append([]netip.Addr{k.VIP}, st.svc.LocalIPs...)...); err != nil {
		return fmt.Errorf("remove service %s: %w", k, err)
	}
	// its entries age out by the global timeouts
	if st.svc.Timeouts != (loadbalancer.StateTimeouts{}) {
		d.pend.timeouts = true
	}
	return nil
}

// acquireLocalIPs finds or adds each local IP and takes a reference on it.
func (d *Datapath) acquireLocalIPs(ips []netip.Addr) ([]uint32, error) {
	var ids []uint32
	for _, ip := range ips {
		if l, ok := d.reg.localIPs[ip]; ok { // in use, or used before
			l.refs++
			ids = append(ids, l.id)
			continue
		}
		id, err := d.reg.laddrIDs.get()
		if err == nil {
			err = d.objs.Laddrs.Put(id, xlbLaddr{Addr: toAddr(ip), Family: familyOf(ip)})
			if err != nil {
				d.reg.laddrIDs.put(id)
			}
		}
		if err != nil {
			d.releaseLocalIPs(ids)
			return nil, fmt.Errorf("local IP %s: %w", ip, err)
		}
		d.reg.localIPs[ip] = &localIP{id: id, refs: 1}
		ids = append(ids, id)
	}
	return ids, nil
}

// releaseLocalIPs drops a reference on each local IP. A local IP no
// service uses any more keeps its id and its entries: connections that
// use it go on, and their replies must still find it. Ids of local IPs
// are therefore never reused (there are XLB_MAX_LADDRS of them).
func (d *Datapath) releaseLocalIPs(ids []uint32) {
	for _, l := range d.reg.localIPs {
		for _, id := range ids {
			if l.id == id {
				l.refs--
			}
		}
	}
}

// service returns a copy of a service's configuration.
func (d *Datapath) service(k loadbalancer.ServiceKey) (loadbalancer.Service, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.reg.services[k]
	if !ok {
		return loadbalancer.Service{}, false
	}
	s := st.svc
	s.LocalIPs = slices.Clone(s.LocalIPs)
	return s, true
}

// AddLocalIP adds a local IP to a service.
func (d *Datapath) AddLocalIP(k loadbalancer.ServiceKey, ip netip.Addr) error {
	s, ok := d.service(k)
	switch {
	case !ok:
		return fmt.Errorf("add local IP %s to %s: %w", ip, k, loadbalancer.ErrNotFound)
	case slices.Contains(s.LocalIPs, ip):
		return fmt.Errorf("add local IP %s to %s: %w", ip, k, loadbalancer.ErrExists)
	}
	s.LocalIPs = append(s.LocalIPs, ip)
	return d.UpdateService(s)
}

// RemoveLocalIP removes a local IP from a service; connections that use
// it continue until they end.
func (d *Datapath) RemoveLocalIP(k loadbalancer.ServiceKey, ip netip.Addr) error {
	s, ok := d.service(k)
	i := slices.Index(s.LocalIPs, ip)
	if !ok || i < 0 {
		return fmt.Errorf("remove local IP %s from %s: %w", ip, k, loadbalancer.ErrNotFound)
	}
	s.LocalIPs = slices.Delete(s.LocalIPs, i, i+1)
	return d.UpdateService(s)
}

// Services returns the services in the order of their ids.
func (d *Datapath) Services() []loadbalancer.Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	states := make([]*serviceState, 0, len(d.reg.services))
	for _, st := range d.reg.services {
		states = append(states, st)
	}
	slices.SortFunc(states, func(a, b *serviceState) int { return int(a.id) - int(b.id) })
	out := make([]loadbalancer.Service, len(states))
	for i, st := range states {
		out[i] = st.svc
	}
	return out
}
