// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// monotonicSeconds reads the clock the data path stamps entries with.
func monotonicSeconds() (uint32, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return 0, fmt.Errorf("read monotonic clock: %w", err)
	}
	return uint32(ts.Sec), nil
}

// entryOf is the listing of slot i of table t (a live entry).
func (t *ctTable) entryOf(i uint32, h ctHead, now uint32) loadbalancer.ConnEntry {
	e := t.entry(i)
	c := loadbalancer.ConnEntry{
		Reverse:   h.flags&ctFReverse != 0,
		State:     loadbalancer.ConnState(h.state),
		Idle:      time.Duration(now-h.lastSeen) * time.Second,
		ServiceID: h.svcID,
		RealID:    e.RealId,
	}
	c.SynProxy = h.flags&ctFSynProxy != 0
	switch {
	case h.flags&ctFProxy != 0:
		c.ClientAddress = loadbalancer.ClientAddressProxyV2
	case h.flags&ctFTOA != 0:
		c.ClientAddress = loadbalancer.ClientAddressTOA
	}
	if t.v6 {
		s := t.slot6(i)
		c.Proto = loadbalancer.Proto(s.Key.Proto)
		c.From = netip.AddrPortFrom(fromAddr(s.Key.Src, familyV6), ntohs(s.Key.Sport))
		c.To = netip.AddrPortFrom(fromAddr(s.Key.Dst, familyV6), ntohs(s.Key.Dport))
		c.Peer = netip.AddrPortFrom(fromAddr(s.Addr6, familyV6), ntohs(e.Port))
		return c
	}
	s := t.slot4(i)
	c.Proto = loadbalancer.Proto(s.Key.Proto)
	c.From = netip.AddrPortFrom(fromAddr([4]uint32{s.Key.Src}, familyV4), ntohs(s.Key.Sport))
	c.To = netip.AddrPortFrom(fromAddr([4]uint32{s.Key.Dst}, familyV4), ntohs(s.Key.Dport))
	c.Peer = netip.AddrPortFrom(fromAddr([4]uint32{s.Addr4}, familyV4), ntohs(e.Port))
	return c
}

// Conns calls fn for every live entry of both connection tables, read
// through their mappings; fn returning false stops the walk. Entries
// change while they are read: the walk is no snapshot.
func (d *Datapath) Conns(fn func(loadbalancer.ConnEntry) bool) error {
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	timeouts := d.timeouts()
	for _, t := range d.ct {
		for i := range t.len() {
			h := t.head(i)
			if !h.isEntry() || t.expired(h, now, timeouts, 0) {
				continue
			}
			c := t.entryOf(i, h, now)
			secs, _ := timeouts.of(h)
			c.Timeout = time.Duration(secs) * time.Second
			if !fn(c) {
				return nil
			}
		}
	}
	return nil
}

// FlushConns removes every live connection entry (ipvsadm has no such command;
// DPVS's `ipvsadm -C` drops connections with the services). Connections
// in flight are scheduled anew on their next packet.
func (d *Datapath) FlushConns() error {
	if _, err := d.deleteConns(func(xlbCtEntry) (bool, bool) { return true, false }); err != nil {
		return fmt.Errorf("flush connections: %w", err)
	}
	return nil
}
