// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// connBatch is how many entries one BPF_MAP_LOOKUP_BATCH call reads.
const connBatch = 4096

// monotonicSeconds reads the clock the data path stamps entries with.
func monotonicSeconds() (uint32, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return 0, fmt.Errorf("read monotonic clock: %w", err)
	}
	return uint32(ts.Sec), nil
}

func entryOf(e xlbCtEntry, addr6 [4]uint32, family uint8, now uint32) loadbalancer.ConnEntry {
	c := loadbalancer.ConnEntry{
		Reverse:   e.Flags&ctFReverse != 0,
		State:     loadbalancer.ConnState(e.State),
		Idle:      time.Duration(now-e.LastSeen) * time.Second,
		ServiceID: e.SvcId,
		RealID:    e.RealId,
	}
	w := addr6
	if family == familyV4 {
		w = [4]uint32{e.Addr4}
	}
	c.Peer = netip.AddrPortFrom(fromAddr(w, family), ntohs(e.Port))
	return c
}

// Conns calls fn for every entry of both connection tables, read in
// batches; fn returning false stops the walk. Entries change while they
// are read: the walk is a snapshot of each batch, not of the table.
func (d *Datapath) Conns(fn func(loadbalancer.ConnEntry) bool) error {
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	keys4 := make([]xlbCt4Key, connBatch)
	vals4 := make([]xlbCtEntry, connBatch)
	more, err := walkBatches(d.objs.Ct4, keys4, vals4, func(i int) bool {
		k := keys4[i]
		c := entryOf(vals4[i], [4]uint32{}, familyV4, now)
		c.Proto = loadbalancer.Proto(k.Proto)
		c.From = netip.AddrPortFrom(fromAddr([4]uint32{k.Src}, familyV4), ntohs(k.Sport))
		c.To = netip.AddrPortFrom(fromAddr([4]uint32{k.Dst}, familyV4), ntohs(k.Dport))
		return fn(c)
	})
	if err != nil || !more {
		return err
	}
	keys6 := make([]xlbCt6Key, connBatch)
	vals6 := make([]xlbCt6Entry, connBatch)
	_, err = walkBatches(d.objs.Ct6, keys6, vals6, func(i int) bool {
		k := keys6[i]
		c := entryOf(vals6[i].Ct, vals6[i].Addr6, familyV6, now)
		c.Proto = loadbalancer.Proto(k.Proto)
		c.From = netip.AddrPortFrom(fromAddr(k.Src, familyV6), ntohs(k.Sport))
		c.To = netip.AddrPortFrom(fromAddr(k.Dst, familyV6), ntohs(k.Dport))
		return fn(c)
	})
	return err
}

// walkBatches reads m in batches into keys and vals and calls fn for each
// entry read; it reports whether the walk went to the end.
func walkBatches[K, V any](m *ebpf.Map, keys []K, vals []V, fn func(i int) bool) (bool, error) {
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			if !fn(i) {
				return false, nil
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s in batches: %w", m, err)
		}
	}
}

// FlushConns removes every connection entry (ipvsadm has no such command;
// DPVS's `ipvsadm -C` drops connections with the services). Connections
// in flight are scheduled anew on their next packet.
func (d *Datapath) FlushConns() error {
	if _, err := d.deleteConns(func(xlbCtEntry) (bool, bool) { return true, false }); err != nil {
		return fmt.Errorf("flush connections: %w", err)
	}
	return nil
}
