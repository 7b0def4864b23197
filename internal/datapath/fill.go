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

// What a measurement of the data path needs beyond the daemon's API: a
// connection table filled in seconds rather than by millions of
// handshakes, and the memory that table takes. The daemon calls neither.

// fillBatch is how many entries one BPF_MAP_UPDATE_BATCH call writes.
const fillBatch = 8192

// FillConns4 writes n established IPv4 loadbalancer.TCP connections of service key,
// each scheduled to its real at address real, straight into the
// connection table, both entries of each as last seen seenAgo ago.
// conn(i) returns connection i's client and the local IP and port the
// balancer talks to the real from; every such local IP is marked as one
// of the balancer's (as a local IP of no service, so it takes no new
// connections) for the real's replies to find their entries.
func (d *Datapath) FillConns4(key loadbalancer.ServiceKey, real netip.AddrPort, n int, seenAgo time.Duration, conn func(i int) (client, local netip.AddrPort)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !key.VIP.Is4() || key.Proto != loadbalancer.TCP || !real.Addr().Is4() {
		return fmt.Errorf("fill connections of %s to %s: IPv4 loadbalancer.TCP only", key, real)
	}
	st, ok := d.reg.services[key]
	if !ok {
		return fmt.Errorf("fill connections of %s: %w", key, loadbalancer.ErrNotFound)
	}
	var realID uint32
	found := false
	for _, r := range st.reals {
		if r.real.Addr == real.Addr() && r.real.Port == real.Port() {
			realID, found = r.id, true
		}
	}
	if !found {
		return fmt.Errorf("fill connections of %s: real %s: %w", key, real, loadbalancer.ErrNotFound)
	}
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	seen := now - uint32(seenAgo/time.Second)
	keys := make([]xlbCt4Key, 0, fillBatch)
	vals := make([]xlbCtEntry, 0, fillBatch)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		if _, err := d.objs.Ct4.BatchUpdate(keys, vals, nil); err != nil {
			return fmt.Errorf("fill ct4: %w", err)
		}
		keys, vals = keys[:0], vals[:0]
		return nil
	}
	vip, realAddr := toAddr(key.VIP).W[0], toAddr(real.Addr()).W[0]
	locals := map[netip.Addr]bool{}
	for i := range n {
		client, local := conn(i)
		c, l := toAddr(client.Addr()).W[0], toAddr(local.Addr()).W[0]
		locals[local.Addr()] = true
		keys = append(keys,
			xlbCt4Key{Src: c, Dst: vip, Sport: htons(client.Port()), Dport: htons(key.Port), Proto: uint8(loadbalancer.TCP)},
			xlbCt4Key{Src: realAddr, Dst: l, Sport: htons(real.Port()), Dport: htons(local.Port()), Proto: uint8(loadbalancer.TCP)})
		vals = append(vals,
			xlbCtEntry{LastSeen: seen, State: uint8(loadbalancer.StateEstablished), SvcId: uint16(st.id), RealId: uint16(realID), Port: htons(local.Port()), Addr4: l},
			xlbCtEntry{LastSeen: seen, State: uint8(loadbalancer.StateEstablished), Flags: ctFReverse, SvcId: uint16(st.id), RealId: uint16(realID), Port: htons(client.Port()), Addr4: c})
		if len(keys) == fillBatch {
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

// ConnTable4Bytes is the memory the IPv4 connection table takes, as the
// kernel accounts it.
func (d *Datapath) ConnTable4Bytes() (uint64, error) {
	info, err := d.objs.Ct4.Info()
	if err != nil {
		return 0, fmt.Errorf("ct4 info: %w", err)
	}
	b, ok := info.Memlock()
	if !ok {
		return 0, errors.New("ct4 info: the kernel reports no memory")
	}
	return b, nil
}
