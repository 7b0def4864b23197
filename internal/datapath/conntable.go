// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// How full the connection tables are (docs/datapath.md, "Connection
// table"). The kernel's LRU evicts an entry to make room for a new one
// without telling anyone, so the tables are watched from their counters
// (ct_stats): the data path counts the entries it adds and the packets
// that find no entry where their connection's should be (misses); this
// file counts the entries the control plane adds and deletes itself.
// Nothing else deletes entries: an expired one stays until the LRU
// evicts it or a new connection of the same key replaces it.

// Connection-table families, as the counters, the metrics and the API
// name them.
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
)

// ConnTableStats are the counters of one connection table, summed over
// the CPUs. They count from the creation of the pinned ct_stats map and
// are not zeroed with the other counters (ZeroCounters): occupancy is
// computed from them.
type ConnTableStats struct {
	Family     string // FamilyIPv4 or FamilyIPv6
	MaxEntries uint32 // the table's size (two entries per connection)
	// Inserts counts the entries added: by the data path, two for each
	// new connection (fewer when one replaces an expired entry of the
	// same key), and by PutConns.
	Inserts uint64
	// Removals counts the entries the control plane deleted
	// (FlushConns, FlushRealConns).
	Removals uint64
	// ReplyMisses counts packets to a local IP, at a port of the local
	// port range, that found no entry at all: replies of a connection the
	// table no longer holds. ForwardMisses counts TCP segments other than
	// a SYN, to a service, that found no entry at all (dropped as
	// tcp_not_syn). An expired entry is not a miss.
	ReplyMisses   uint64
	ForwardMisses uint64
}

// Entries is how many entries the table holds by its counters: inserts
// minus removals, clamped to [0, MaxEntries]. Live and expired entries
// alike: an expired entry leaves only when the LRU evicts it.
func (s ConnTableStats) Entries() uint64 {
	if s.Removals >= s.Inserts {
		return 0
	}
	return min(s.Inserts-s.Removals, uint64(s.MaxEntries))
}

// EvictedAtLeast is how many entries the LRU must have evicted: the
// inserts that found the table full by the counters.
func (s ConnTableStats) EvictedAtLeast() uint64 {
	if s.Removals >= s.Inserts {
		return 0
	}
	return s.Inserts - s.Removals - s.Entries()
}

// ctFamilies are the connection-table families in ct_stats order.
var ctFamilies = [...]string{FamilyIPv4, FamilyIPv6}

// ctStatSlot is the ct_stats index of a counter of family i (0 IPv4, 1
// IPv6): each family has half of the map.
func (d *Datapath) ctStatSlot(i int, stat xlbXlbCtStat) uint32 {
	return uint32(i)*(d.objs.CtStats.MaxEntries()/2) + uint32(stat)
}

// ConnTableStats returns the counters of the IPv4 and the IPv6 table, in
// that order. It reads a few per-CPU slots: cheap enough for every tick.
func (d *Datapath) ConnTableStats() ([]ConnTableStats, error) {
	out := make([]ConnTableStats, len(ctFamilies))
	for i, fam := range ctFamilies {
		var n [xlbXlbCtStatCT_STAT_MAX]uint64
		for stat := range n {
			var err error
			if n[stat], err = sumSlot(d.objs.CtStats, d.ctStatSlot(i, xlbXlbCtStat(stat))); err != nil {
				return nil, err
			}
		}
		out[i] = ConnTableStats{Family: fam, MaxEntries: d.ctMap(i).MaxEntries(),
			Inserts:       n[xlbXlbCtStatCT_STAT_INSERTS] + n[xlbXlbCtStatCT_STAT_CP_INSERTS],
			Removals:      n[xlbXlbCtStatCT_STAT_CP_REMOVALS],
			ReplyMisses:   n[xlbXlbCtStatCT_STAT_MISS_REPLY],
			ForwardMisses: n[xlbXlbCtStatCT_STAT_MISS_FORWARD]}
	}
	return out, nil
}

func (d *Datapath) ctMap(i int) *ebpf.Map {
	if i == 0 {
		return d.objs.Ct4
	}
	return d.objs.Ct6
}

// sumSlot reads one slot of a per-CPU counter map, summed over the CPUs.
func sumSlot(m *ebpf.Map, key uint32) (uint64, error) {
	var perCPU []uint64
	if err := m.Lookup(key, &perCPU); err != nil {
		return 0, fmt.Errorf("read %s[%d]: %w", m, key, err)
	}
	var sum uint64
	for _, v := range perCPU {
		sum += v
	}
	return sum, nil
}

// countControlPlane adds n to a control-plane counter of family i. The
// data path never writes these slots, so rewriting the whole per-CPU
// value (the sum on CPU 0) loses nothing; ctMu orders this package's
// writers.
func (d *Datapath) countControlPlane(i int, stat xlbXlbCtStat, n uint64) error {
	if n == 0 {
		return nil
	}
	d.ctMu.Lock()
	defer d.ctMu.Unlock()
	key := d.ctStatSlot(i, stat)
	sum, err := sumSlot(d.objs.CtStats, key)
	if err != nil {
		return err
	}
	// a slice shorter than the possible CPUs leaves the others zero
	if err := d.objs.CtStats.Put(key, []uint64{sum + n}); err != nil {
		return fmt.Errorf("count in %s[%d]: %w", d.objs.CtStats, key, err)
	}
	return nil
}

// ConnTableCount is what a walk of one connection table found.
type ConnTableCount struct {
	Family  string
	Entries uint64 // every entry, live or expired
	Live    uint64 // entries idle no longer than their state's timeout
}

// CountConnEntries walks both connection tables and counts their
// entries, live and all. It reads every entry (32 bytes each for IPv4,
// 56 for IPv6) in batches of connBatch: about as costly as Status, which
// walks the same way, about a second of one CPU for two million entries.
// Call it seldom.
func (d *Datapath) CountConnEntries() ([]ConnTableCount, error) {
	now, err := monotonicSeconds()
	if err != nil {
		return nil, err
	}
	settings := d.Settings()
	var timeouts [xlbCtStateCT_STATE_MAX]uint32
	for st := range timeouts {
		timeouts[st] = uint32(settings.Timeout(loadbalancer.ConnState(st)) / time.Second)
	}
	count := func(c *ConnTableCount, e xlbCtEntry) {
		c.Entries++
		if int(e.State) < len(timeouts) && now-e.LastSeen <= timeouts[e.State] {
			c.Live++
		}
	}
	out := []ConnTableCount{{Family: FamilyIPv4}, {Family: FamilyIPv6}}
	keys4, vals4 := make([]xlbCt4Key, connBatch), make([]xlbCtEntry, connBatch)
	if _, err := walkBatches(d.objs.Ct4, keys4, vals4, func(i int) bool {
		count(&out[0], vals4[i])
		return true
	}); err != nil {
		return nil, err
	}
	keys6, vals6 := make([]xlbCt6Key, connBatch), make([]xlbCt6Entry, connBatch)
	if _, err := walkBatches(d.objs.Ct6, keys6, vals6, func(i int) bool {
		count(&out[1], vals6[i].Ct)
		return true
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// deleteConns deletes the entries of both tables that match says to
// delete, counts them as removals, and returns how many of them were
// forward entries (one per connection).
func (d *Datapath) deleteConns(match func(xlbCtEntry) (del, fwd bool)) (int, error) {
	fwd4, n4, err := deleteEntries[xlbCt4Key](d.objs.Ct4, match)
	if cerr := d.countControlPlane(0, xlbXlbCtStatCT_STAT_CP_REMOVALS, uint64(n4)); err == nil {
		err = cerr
	}
	if err != nil {
		return fwd4, err
	}
	fwd6, n6, err := deleteEntries[xlbCt6Key](d.objs.Ct6, func(e xlbCt6Entry) (bool, bool) { return match(e.Ct) })
	if cerr := d.countControlPlane(1, xlbXlbCtStatCT_STAT_CP_REMOVALS, uint64(n6)); err == nil {
		err = cerr
	}
	return fwd4 + fwd6, err
}

// deleteEntries deletes the entries of m that match says to delete; it
// returns how many of those were forward entries and how many entries it
// deleted (an entry the LRU evicted meanwhile is not one), even on error.
func deleteEntries[K, V any](m *ebpf.Map, match func(V) (del, fwd bool)) (fwd, deleted int, err error) {
	var (
		k     K
		v     V
		keys  []K
		isFwd []bool
	)
	iter := m.Iterate()
	for iter.Next(&k, &v) {
		if del, f := match(v); del {
			keys = append(keys, k)
			isFwd = append(isFwd, f)
		}
	}
	if err := iter.Err(); err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", m, err)
	}
	for i, key := range keys {
		err := m.Delete(key)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			continue
		}
		if err != nil {
			return fwd, deleted, fmt.Errorf("delete from %s: %w", m, err)
		}
		deleted++
		if isFwd[i] {
			fwd++
		}
	}
	return fwd, deleted, nil
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
