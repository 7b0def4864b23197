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

// putBatch is how many entries one BPF_MAP_UPDATE_BATCH call writes.
const putBatch = 8192

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
// must return the same connection both times. Every local IP the connections
// use is marked as one of the balancer's (as a local IP of no service if
// the service does not have it, so it takes no new connections), so that
// the reals' replies find their entries. The entries count as inserts of
// the control plane (ConnTableStats). IPv6 is not supported yet: its
// table has another entry layout, and nothing needs it so far.
func (d *Datapath) PutConns(key loadbalancer.ServiceKey, n int, seenAgo time.Duration, conn func(i int) EstablishedConn) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !key.VIP.Is4() || key.Proto != loadbalancer.TCP {
		return fmt.Errorf("put connections of %s: IPv4 TCP services only", key)
	}
	st, ok := d.reg.services[key]
	if !ok {
		return fmt.Errorf("put connections of %s: %w", key, loadbalancer.ErrNotFound)
	}
	realIDs := make(map[netip.AddrPort]uint32, len(st.reals))
	for _, r := range st.reals {
		realIDs[netip.AddrPortFrom(r.real.Addr, r.real.Port)] = r.id
	}
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	seen := now - uint32(seenAgo/time.Second)
	keys := make([]xlbCt4Key, 0, putBatch)
	vals := make([]xlbCtEntry, 0, putBatch)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		if _, err := d.objs.Ct4.BatchUpdate(keys, vals, nil); err != nil {
			return fmt.Errorf("put connections into ct4: %w", err)
		}
		keys, vals = keys[:0], vals[:0]
		return nil
	}
	// a bad connection leaves the table as it was
	locals := map[netip.Addr]bool{}
	for i := range n {
		c := conn(i)
		if _, ok := realIDs[c.Real]; !ok {
			return fmt.Errorf("put connection %d of %s: real %s: %w", i, key, c.Real, loadbalancer.ErrNotFound)
		}
		if !c.Client.Addr().Is4() || !c.Local.Addr().Is4() {
			return fmt.Errorf("put connection %d of %s: client %s or local %s is not IPv4", i, key, c.Client, c.Local)
		}
		locals[c.Local.Addr()] = true
	}
	vip := toAddr(key.VIP).W[0]
	for i := range n {
		c := conn(i)
		realID := realIDs[c.Real]
		client, local, realAddr := toAddr(c.Client.Addr()).W[0], toAddr(c.Local.Addr()).W[0], toAddr(c.Real.Addr()).W[0]
		keys = append(keys,
			xlbCt4Key{Src: client, Dst: vip, Sport: htons(c.Client.Port()), Dport: htons(key.Port), Proto: uint8(loadbalancer.TCP)},
			xlbCt4Key{Src: realAddr, Dst: local, Sport: htons(c.Real.Port()), Dport: htons(c.Local.Port()), Proto: uint8(loadbalancer.TCP)})
		vals = append(vals,
			xlbCtEntry{LastSeen: seen, State: uint8(loadbalancer.StateEstablished), SvcId: uint16(st.id), RealId: uint16(realID), Port: htons(c.Local.Port()), Addr4: local},
			xlbCtEntry{LastSeen: seen, State: uint8(loadbalancer.StateEstablished), Flags: ctFReverse, SvcId: uint16(st.id), RealId: uint16(realID), Port: htons(c.Client.Port()), Addr4: client})
		if len(keys) == putBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := d.countControlPlane(0, xlbXlbCtStatCT_STAT_CP_INSERTS, 2*uint64(n)); err != nil {
		return err
	}
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
