// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cilium/ebpf"
)

// How full the connection tables are (docs/datapath.md, "Connection
// table"). The data path counts the entries it writes, the new
// connections it refuses for want of a free slot and the packets that
// find no entry where their connection's should be (misses); this file
// counts the entries the control plane writes and gives back itself. The
// data path reuses an expired entry's slot without a count, so how many
// entries a table holds comes from walking it (CountConnEntries), which
// reads the table's own mapping.

// Connection-table families, as the counters, the metrics and the API
// name them.
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
)

// ConnTableStats are the counters of one connection table, summed over
// the CPUs. They count from the creation of the pinned ct_stats map and
// are not zeroed with the other counters (ZeroCounters).
type ConnTableStats struct {
	Family string // FamilyIPv4 or FamilyIPv6
	// MaxEntries is what the table is sized for: two entries for each
	// connection of its configured size.
	MaxEntries uint64
	// Conns is the size the table was created for, in connections, and
	// Bytes the memory its slots take.
	Conns uint32
	Bytes uint64
	// Inserts counts the entries written: by the data path, two for each
	// new connection, and by PutConns.
	Inserts uint64
	// Removals counts the entries the control plane gave back
	// (FlushConns, FlushRealConns).
	Removals uint64
	// Refused counts the new connections the data path refused because
	// the table had no free slot for an entry (the drop conn_table_full).
	Refused uint64
	// HalfOpenDrops counts the half-open connections, idle for
	// XLB_CT_HALF_OPEN_AGE seconds, whose place a new connection took
	// for want of a free slot (Linux conntrack's early drop).
	HalfOpenDrops uint64
	// ReplyMisses counts packets to a local IP, at a port of the local
	// port range, that found no entry at all: replies of a connection the
	// table no longer holds. ForwardMisses counts TCP segments other than
	// a SYN, to a service, that found no entry at all (dropped as
	// tcp_not_syn). An expired entry is not a miss.
	ReplyMisses   uint64
	ForwardMisses uint64
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
		out[i] = ConnTableStats{Family: fam, MaxEntries: 2 * uint64(d.conns[i]), Conns: d.conns[i], Bytes: d.ct[i].bytes(),
			Inserts:       n[xlbXlbCtStatCT_STAT_INSERTS] + n[xlbXlbCtStatCT_STAT_CP_INSERTS],
			Removals:      n[xlbXlbCtStatCT_STAT_CP_REMOVALS],
			Refused:       n[xlbXlbCtStatCT_STAT_FULL],
			HalfOpenDrops: n[xlbXlbCtStatCT_STAT_HALF_OPEN_DROPS],
			ReplyMisses:   n[xlbXlbCtStatCT_STAT_MISS_REPLY],
			ForwardMisses: n[xlbXlbCtStatCT_STAT_MISS_FORWARD]}
	}
	return out, nil
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

// CountConnEntries reads both connection tables and counts their
// entries, live and all. It reads the first 8 bytes of every slot through
// the table's mapping: about 30 ms per million slots. Call it seldom.
func (d *Datapath) CountConnEntries() ([]ConnTableCount, error) {
	now, err := monotonicSeconds()
	if err != nil {
		return nil, err
	}
	timeouts := d.timeouts()
	out := []ConnTableCount{{Family: FamilyIPv4}, {Family: FamilyIPv6}}
	for f, t := range d.ct {
		for i := range t.len() {
			h := t.head(i)
			if !h.isEntry() {
				continue
			}
			out[f].Entries++
			if !t.expired(h, now, timeouts, 0) {
				out[f].Live++
			}
		}
	}
	return out, nil
}

// deleteConns gives back the slots of every live entry of both tables
// that match says to delete, counts them as removals, and returns how
// many of them were forward entries (one per connection).
func (d *Datapath) deleteConns(match func(xlbCtEntry) (del, fwd bool)) (int, error) {
	now, err := monotonicSeconds()
	if err != nil {
		return 0, err
	}
	timeouts := d.timeouts()
	fwd := 0
	for f, t := range d.ct {
		var deleted uint64
		for i := range t.len() {
			old := atomic.LoadUint64(t.headWord(i))
			h := headOf(old)
			if !h.isEntry() || t.expired(h, now, timeouts, 0) {
				continue
			}
			e := *t.entry(i)
			e.LastSeen, e.State, e.Flags, e.SvcId = h.lastSeen, h.state, h.flags, h.svcID
			del, isFwd := match(e)
			if !del || !t.kill(i, old) {
				continue
			}
			deleted++
			if isFwd {
				fwd++
			}
		}
		if err := d.countControlPlane(f, xlbXlbCtStatCT_STAT_CP_REMOVALS, deleted); err != nil {
			return fwd, err
		}
	}
	return fwd, nil
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

// ConnTableDepth is where a table's live forward entries lie from their
// home slot, by 128-byte pair: what an established client->real packet
// reads. Reverse entries are always in their home pair.
type ConnTableDepth struct {
	Family  string
	Forward uint64 // live forward entries
	// ByPair counts them in the home pair, the next pair, the one after
	// it, and further.
	ByPair [4]uint64
}

// MeanPairs is the mean number of pairs a lookup of a forward entry
// reads (ByPair's last class counted as its lower bound, four).
func (c ConnTableDepth) MeanPairs() float64 {
	if c.Forward == 0 {
		return 0
	}
	var sum uint64
	for i, n := range c.ByPair {
		sum += uint64(i+1) * n
	}
	return float64(sum) / float64(c.Forward)
}

// ConnTableDepths walks both tables (as CountConnEntries does) and says
// where their live forward entries lie from their homes.
func (d *Datapath) ConnTableDepths() ([]ConnTableDepth, error) {
	now, err := monotonicSeconds()
	if err != nil {
		return nil, err
	}
	timeouts := d.timeouts()
	out := []ConnTableDepth{{Family: FamilyIPv4}, {Family: FamilyIPv6}}
	for f, t := range d.ct {
		for i := range t.len() {
			h := t.head(i)
			if !h.isEntry() || h.flags&ctFReverse != 0 || t.expired(h, now, timeouts, 0) {
				continue
			}
			var k ctKey
			if t.v6 {
				k.v6 = t.slot6(i).Key
			} else {
				k.v4 = t.slot4(i).Key
			}
			out[f].Forward++
			out[f].ByPair[min((i-t.home(k))/2, 3)]++
		}
	}
	return out, nil
}
