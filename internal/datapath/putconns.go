// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// EstablishedConn is one established connection of a service as the
// balancer holds it: the client, the real it is scheduled to, and the
// local IP and port the balancer talks to that real from.
type EstablishedConn struct {
	Client netip.AddrPort
	Real   netip.AddrPort
	Local  netip.AddrPort
}

// PutConns writes n established TCP connections of the IPv4 service key
// straight into the connection table, both entries of each, as last seen
// seenAgo ago: what a node that takes connections over from another
// writes, and what a measurement writes to fill a table in seconds
// rather than by millions of handshakes. conn(i) returns connection i;
// its real must be one of the service's. conn is called twice for each
// i (every connection is checked before the first is written), so it
// must return the same connection both times.
//
// A reverse entry lives in the home pair of its key, as the data path
// keeps it (bpf/lib/ct_table.h). When the pair of a connection's local
// port has no room, or another live connection holds that port towards
// the same real, PutConns takes another port of the same local IP, as the
// data path's allocator would; placed (if not nil) is told the local IP
// and port each connection got. A connection that finds no room either
// way fails the call (the connections before it stay).
//
// Every local IP the connections use is marked as one of the balancer's
// (as a local IP of no service if the service does not have it, so it
// takes no new connections), so that the reals' replies find their
// entries. The entries count as inserts of the control plane
// (ConnTableStats). IPv6 is not supported yet.
func (d *Datapath) PutConns(key loadbalancer.ServiceKey, n int, seenAgo time.Duration, conn func(i int) EstablishedConn, placed func(i int, local netip.AddrPort)) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !key.VIP.Is4() || key.Proto != loadbalancer.TCP {
		return 0, fmt.Errorf("put connections of %s: IPv4 TCP services only", key)
	}
	st, ok := d.reg.services[key]
	if !ok {
		return 0, fmt.Errorf("put connections of %s: %w", key, loadbalancer.ErrNotFound)
	}
	realIDs := make(map[netip.AddrPort]uint32, len(st.reals))
	for _, r := range st.reals {
		realIDs[netip.AddrPortFrom(r.real.Addr, r.real.Port)] = r.id
	}
	now, err := monotonicSeconds()
	if err != nil {
		return 0, err
	}
	// a bad connection leaves the table as it was
	locals := map[netip.Addr]bool{}
	for i := range n {
		c := conn(i)
		if _, ok := realIDs[c.Real]; !ok {
			return 0, fmt.Errorf("put connection %d of %s: real %s: %w", i, key, c.Real, loadbalancer.ErrNotFound)
		}
		if !c.Client.Addr().Is4() || !c.Local.Addr().Is4() {
			return 0, fmt.Errorf("put connection %d of %s: client %s or local %s is not IPv4", i, key, c.Client, c.Local)
		}
		locals[c.Local.Addr()] = true
	}
	if err := d.markLocals(locals); err != nil {
		return 0, err
	}
	p := connPutter{t: d.ct[0], now: now, seen: now - uint32(seenAgo/time.Second), timeouts: d.timeoutsLocked(),
		svcID: uint16(st.id), vip: toAddr(key.VIP).W[0], vport: htons(key.Port),
		portMin: d.settings.LocalPortMin, portMax: d.settings.LocalPortMax}
	put := 0
	defer func() { _ = d.countControlPlane(0, xlbXlbCtStatCT_STAT_CP_INSERTS, 2*uint64(put)) }()
	for i := range n {
		c := conn(i)
		local, err := p.put(c, uint16(realIDs[c.Real]))
		if errors.Is(err, errTableFull) {
			continue
		}
		if err != nil {
			return put, fmt.Errorf("put connection %d of %s (%s): %w", i, key, c.Client, err)
		}
		put++
		if placed != nil {
			placed(i, local)
		}
	}
	return put, nil
}

// markLocals marks addresses as local IPs in local_addrs.
func (d *Datapath) markLocals(locals map[netip.Addr]bool) error {
	for a := range locals {
		k := xlbServiceKey{Vip: toAddr(a), Family: familyV4}
		var flags uint32
		if err := d.objs.LocalAddrs.Lookup(k, &flags); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("read local_addrs entry of %s: %w", a, err)
		}
		if err := d.objs.LocalAddrs.Put(k, flags|addrLaddr); err != nil {
			return fmt.Errorf("mark local IP %s: %w", a, err)
		}
	}
	return d.writeAddrFilter()
}

// connPutter writes established IPv4 connections of one service.
type connPutter struct {
	t                *ctTable
	now, seen        uint32
	timeouts         ctTimeouts
	svcID            uint16
	vip              uint32
	vport            uint16
	portMin, portMax uint16
}

// putPortTries is how many local ports PutConns tries for a connection:
// the one asked for, then others of the range a prime stride apart.
const (
	putPortTries  = 64
	putPortStride = 4099
)

var (
	errConnExists = errors.New("the connection table already holds it")
	errTableFull  = errors.New("no free slot in its probe: the connection table is full there")
)

// put writes the two entries of c, the reverse one first (it picks the
// local port), and returns the local IP and port it got.
func (p *connPutter) put(c EstablishedConn, realID uint16) (netip.AddrPort, error) {
	client, local, real := toAddr(c.Client.Addr()).W, toAddr(c.Local.Addr()).W, toAddr(c.Real.Addr()).W
	state := uint8(loadbalancer.StateEstablished)
	fwdKey := ctKey{v4: xlbCt4Key{Src: client[0], Dst: p.vip, Sport: htons(c.Client.Port()), Dport: p.vport, Proto: uint8(loadbalancer.TCP)}}
	fwdSlot, ok, free, hasFree := p.t.find(fwdKey, p.now, p.timeouts, ctProbe)
	if ok {
		return netip.AddrPort{}, errConnExists
	}
	if !hasFree || !p.t.claim(free, p.now, p.timeouts) {
		return netip.AddrPort{}, errTableFull
	}
	fwdSlot = free
	span := uint32(p.portMax) - uint32(p.portMin) + 1
	port := c.Local.Port()
	for range putPortTries {
		revKey := ctKey{v4: xlbCt4Key{Src: real[0], Dst: local[0], Sport: htons(c.Real.Port()), Dport: htons(port), Proto: uint8(loadbalancer.TCP)}}
		rev := xlbCtEntry{LastSeen: p.seen, State: state, Flags: ctFReverse, SvcId: p.svcID, RealId: realID, Port: htons(c.Client.Port()), Peer: fwdSlot}
		revSlot, err := p.t.insert(revKey, rev, client, p.now, p.timeouts, true)
		if err == nil {
			fwd := xlbCtEntry{LastSeen: p.seen, State: state, SvcId: p.svcID, RealId: realID, Port: htons(port), Peer: revSlot}
			p.t.publish(fwdSlot, fwdKey, fwd, local)
			return netip.AddrPortFrom(c.Local.Addr(), port), nil
		}
		port = uint16(uint32(p.portMin) + (uint32(port)-uint32(p.portMin)+putPortStride)%span)
	}
	p.t.release(fwdSlot)
	return netip.AddrPort{}, fmt.Errorf("no local port of %s towards %s has room in its reverse pair: %w", c.Local.Addr(), c.Real, errTableFull)
}
