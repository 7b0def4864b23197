// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The Go side of bpf/lib/ct_table.h: the same hash, homes and probe over
// the same slots, read and written through a shared mapping of the map
// (it is BPF_F_MMAPABLE). A slot's first 8 bytes are claimed and published
// atomically on both sides, so the control plane and the CPUs of the data
// path may write the table at once.

const (
	ctHashSeed = 0x7ab1e5ed // XLB_CT_HASH_SEED
	jhashInit  = 0xdeadbeef // XLB_JHASH_INIT

	// ctSlotsPerConnNum/Den is XLB_CT_SLOTS_PER_CONN_NUM/DEN: two
	// entries per connection, the table at most 5/8 full.
	ctSlotsPerConnNum = 16
	ctSlotsPerConnDen = 5
	// ctProbe is XLB_CT_PROBE, the slots a probe reads at most.
	ctProbe = 16
	// ctReuseGrace and ctHoldPeriod are XLB_CT_REUSE_GRACE and
	// XLB_CT_HOLD_PERIOD, in seconds.
	ctReuseGrace = 2
	ctHoldPeriod = 16
	// ctHalfOpenAge is XLB_CT_HALF_OPEN_AGE: seconds a half-open
	// connection is idle before a new one may take its place.
	ctHalfOpenAge = 2
	// ctStateInvalid is CT_STATE_MAX: a state no entry has, the mark of
	// a slot given back (expired at once, still used).
	ctStateInvalid = uint8(xlbCtStateCT_STATE_MAX)
)

// The slot flags Go reads (enum ct_flags, from the object).
var (
	ctFReverse  = uint8(xlbCtFlagsCT_F_REVERSE) // an entry of the real -> local IP direction
	ctFUsed     = uint8(xlbCtFlagsCT_F_USED)
	ctFTOA      = uint8(xlbCtFlagsCT_F_TOA)
	ctFProxy    = uint8(xlbCtFlagsCT_F_PROXY)
	ctFSynProxy = uint8(xlbCtFlagsCT_F_SYNPROXY)
	ctFBusy     = uint8(xlbCtFlagsCT_F_BUSY)
)

// CtSlots is how many slots (hash homes) a table for conns connections
// has: two entries per connection, the table 5/8 full at most, even.
// The map holds ctProbe slots more, so that no probe wraps.
func CtSlots(conns uint32) uint32 {
	s := (uint64(conns)*ctSlotsPerConnNum + ctSlotsPerConnDen - 1) / ctSlotsPerConnDen
	s += s & 1
	return uint32(min(s, 1<<31))
}

// ConnTableBytes is the memory a table of conns connections takes: its
// slots (64 bytes for IPv4, 128 for IPv6), page aligned.
func ConnTableBytes(v6 bool, conns uint32) uint64 {
	return pageAlign(uint64(CtSlots(conns)+ctProbe) * ctSlotSize(v6))
}

func ctSlotSize(v6 bool) uint64 {
	if v6 {
		return uint64(unsafe.Sizeof(xlbCt6Slot{}))
	}
	return uint64(unsafe.Sizeof(xlbCt4Slot{}))
}

func pageAlign(n uint64) uint64 {
	page := uint64(unix.Getpagesize())
	return (n + page - 1) / page * page
}

func rol32(w uint32, s int) uint32 { return bits.RotateLeft32(w, s) }

// jhash3 is jhash_3words of bpf/lib/hash.h.
func jhash3(a, b, c, seed uint32) uint32 {
	init := uint32(jhashInit) + 3<<2 + seed
	a, b, c = a+init, b+init, c+init
	c ^= b
	c -= rol32(b, 14)
	a ^= c
	a -= rol32(c, 11)
	b ^= a
	b -= rol32(a, 25)
	c ^= b
	c -= rol32(b, 16)
	a ^= c
	a -= rol32(c, 4)
	b ^= a
	b -= rol32(a, 14)
	c ^= b
	c -= rol32(b, 24)
	return c
}

// ctHash4 and ctHash6 are ct_hash.
func ctHash4(k xlbCt4Key) uint32 {
	return jhash3(k.Src, k.Dst, uint32(k.Sport)|uint32(k.Dport)<<16, ctHashSeed+uint32(k.Proto))
}

func ctHash6(k xlbCt6Key) uint32 {
	h := jhash3(k.Src[0], k.Src[1], k.Src[2], ctHashSeed+uint32(k.Proto))
	h = jhash3(k.Src[3], k.Dst[0], k.Dst[1], h)
	return jhash3(k.Dst[2], k.Dst[3], uint32(k.Sport)|uint32(k.Dport)<<16, h)
}

// ctHome is ct_home: the even home slot of a hash among homes slots.
func ctHome(hash, homes uint32) uint32 {
	return uint32(uint64(hash)*uint64(homes/2)>>32) * 2
}

// ctHead is a slot's first word as the data path swaps it.
type ctHead struct {
	lastSeen uint32
	state    uint8
	flags    uint8
	svcID    uint16
}

func (h ctHead) word() uint64 {
	return uint64(h.lastSeen) | uint64(h.state)<<32 | uint64(h.flags)<<40 | uint64(h.svcID)<<48
}

func headOf(w uint64) ctHead {
	return ctHead{lastSeen: uint32(w), state: uint8(w >> 32), flags: uint8(w >> 40), svcID: uint16(w >> 48)}
}

// isEntry tells whether a slot of head h holds an entry, live or expired:
// used, not being written, not given back.
func (h ctHead) isEntry() bool {
	return h.flags&ctFUsed != 0 && h.flags&ctFBusy == 0 && h.state != ctStateInvalid
}

// ctTable is one family's connection table, mapped into this process.
type ctTable struct {
	m        *ebpf.Map
	mem      []byte
	v6       bool
	slotSize int
	homes    uint32 // what hashes spread over; the map has ctProbe more
}

// openCtTable maps m. Its slots beyond the last home are the probe's tail.
func openCtTable(m *ebpf.Map, v6 bool) (*ctTable, error) {
	t := &ctTable{m: m, v6: v6, slotSize: int(ctSlotSize(v6))}
	if m.ValueSize() != uint32(t.slotSize) || m.MaxEntries() <= ctProbe+2 {
		return nil, fmt.Errorf("map %s: %d slots of %d bytes, want more than %d of %d", m, m.MaxEntries(), m.ValueSize(), ctProbe+2, t.slotSize)
	}
	t.homes = (m.MaxEntries() - ctProbe) &^ 1
	size := int(pageAlign(uint64(m.MaxEntries()) * uint64(t.slotSize)))
	mem, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s into memory: %w", m, err)
	}
	t.mem = mem
	return t, nil
}

func (t *ctTable) close() error {
	if t == nil || t.mem == nil {
		return nil
	}
	err := unix.Munmap(t.mem)
	t.mem = nil
	return err
}

// len is the number of slots, the probe's tail included.
func (t *ctTable) len() uint32 { return t.m.MaxEntries() }

// bytes is the memory the table's slots take.
func (t *ctTable) bytes() uint64 { return pageAlign(uint64(t.len()) * uint64(t.slotSize)) }

func (t *ctTable) ptr(i uint32) unsafe.Pointer {
	return unsafe.Pointer(&t.mem[int(i)*t.slotSize])
}

func (t *ctTable) headWord(i uint32) *uint64 { return (*uint64)(t.ptr(i)) }

func (t *ctTable) head(i uint32) ctHead { return headOf(atomic.LoadUint64(t.headWord(i))) }

// entry is slot i's entry; its first word may change under the reader.
func (t *ctTable) entry(i uint32) *xlbCtEntry { return (*xlbCtEntry)(t.ptr(i)) }

func (t *ctTable) slot4(i uint32) *xlbCt4Slot { return (*xlbCt4Slot)(t.ptr(i)) }
func (t *ctTable) slot6(i uint32) *xlbCt6Slot { return (*xlbCt6Slot)(t.ptr(i)) }

// ctKey is a key of either family; v6 tells which half is meant.
type ctKey struct {
	v4 xlbCt4Key
	v6 xlbCt6Key
}

func (t *ctTable) home(k ctKey) uint32 {
	if t.v6 {
		return ctHome(ctHash6(k.v6), t.homes)
	}
	return ctHome(ctHash4(k.v4), t.homes)
}

func (t *ctTable) holds(i uint32, k ctKey) bool {
	if t.v6 {
		return t.slot6(i).Key == k.v6
	}
	return t.slot4(i).Key == k.v4
}

// expired is ct_idle_past.
func (t *ctTable) expired(h ctHead, now uint32, timeouts ctTimeouts, grace uint32) bool {
	secs, ok := timeouts.of(h)
	if !ok {
		return true
	}
	return now-h.lastSeen > secs+grace
}

// free is ct_free, for slot i of head h.
func (t *ctTable) free(i uint32, h ctHead, now uint32, timeouts ctTimeouts) bool {
	switch {
	case h.flags&ctFUsed == 0:
		return true
	case h.flags&ctFBusy != 0:
		return false
	case h.flags&ctFReverse == 0:
		return t.expired(h, now, timeouts, ctReuseGrace)
	case !t.expired(h, now, timeouts, ctReuseGrace):
		return false
	}
	return t.expired(h, now, timeouts, ctHoldPeriod) || t.forwardGone(i, now, timeouts)
}

// forwardGone is ct_forward_gone: the forward entry of the reverse entry
// in slot i is expired past its grace, given back or another
// connection's.
func (t *ctTable) forwardGone(i, now uint32, timeouts ctTimeouts) bool {
	peer := t.entry(i).Peer
	if peer >= t.len() {
		return true
	}
	h := t.head(peer)
	switch {
	case h.flags&ctFBusy != 0:
		return false
	case h.flags&(ctFUsed|ctFReverse) != ctFUsed || t.entry(peer).Peer != i:
		return true
	}
	return t.expired(h, now, timeouts, ctReuseGrace)
}

// find is ct_find: the slot of k's live entry (ok), else the first slot
// an insert of k may take (free, or false when there is none).
func (t *ctTable) find(k ctKey, now uint32, timeouts ctTimeouts, span uint32) (slot uint32, ok bool, free uint32, hasFree bool) {
	home := t.home(k)
	for i := home; i < home+span && i < t.len(); i++ {
		h := t.head(i)
		if h.flags&ctFUsed == 0 {
			if !hasFree {
				free, hasFree = i, true
			}
			return 0, false, free, hasFree
		}
		if h.flags&ctFBusy != 0 {
			continue
		}
		if t.holds(i, k) && !t.expired(h, now, timeouts, 0) {
			return i, true, 0, false
		}
		if !hasFree && t.free(i, h, now, timeouts) {
			free, hasFree = i, true
		}
	}
	return 0, false, free, hasFree
}

// claim is ct_claim (never of a taken slot).
func (t *ctTable) claim(i, now uint32, timeouts ctTimeouts) bool {
	old := atomic.LoadUint64(t.headWord(i))
	if !t.free(i, headOf(old), now, timeouts) {
		return false
	}
	busy := ctHead{lastSeen: now, flags: ctFUsed | ctFBusy}
	return atomic.CompareAndSwapUint64(t.headWord(i), old, busy.word())
}

// publish is ct_publish: everything but the first word, then that word.
func (t *ctTable) publish(i uint32, k ctKey, e xlbCtEntry, addr [4]uint32) {
	t.publishOwned(i, k, e, addr, 0)
}

// publishOwned is publish of an entry node owner made (0: this one).
func (t *ctTable) publishOwned(i uint32, k ctKey, e xlbCtEntry, addr [4]uint32, owner uint16) {
	if t.v6 {
		s := t.slot6(i)
		s.Key, s.Addr6 = k.v6, addr
		s.Ext, s.Reserved = xlbCt6Slot{}.Ext, xlbCt6Slot{}.Reserved
		s.Ext.OwnerNode = owner
	} else {
		s := t.slot4(i)
		s.Key, s.Addr4, s.Pad = k.v4, addr[0], 0
		s.Ext, s.Reserved = xlbCt4Slot{}.Ext, xlbCt4Slot{}.Reserved
		s.Ext.OwnerNode = owner
	}
	ent := t.entry(i)
	ent.RealId, ent.Port, ent.Peer = e.RealId, e.Port, e.Peer
	h := ctHead{lastSeen: e.LastSeen, state: e.State, flags: (e.Flags | ctFUsed) &^ ctFBusy, svcID: e.SvcId}
	atomic.StoreUint64(t.headWord(i), h.word())
}

// kill gives slot i's entry back if it still has head old: used (probes
// go past it) and expired at once, as ct_release does. It reports whether
// it did.
func (t *ctTable) kill(i uint32, old uint64) bool {
	h := headOf(old)
	if h.flags&ctFUsed == 0 || h.flags&ctFBusy != 0 {
		return false
	}
	dead := ctHead{flags: ctFUsed, state: ctStateInvalid}
	return atomic.CompareAndSwapUint64(t.headWord(i), old, dead.word())
}

// release gives back slot i this process claimed, as ct_release does.
func (t *ctTable) release(i uint32) {
	dead := ctHead{flags: ctFUsed, state: ctStateInvalid}
	atomic.StoreUint64(t.headWord(i), dead.word())
}

// insert writes entry e of key k into the first free slot of its probe
// (of its home pair only, with pairOnly: where reverse entries live),
// unless a live entry of k is there. It returns the slot.
func (t *ctTable) insert(k ctKey, e xlbCtEntry, addr [4]uint32, now uint32, timeouts ctTimeouts, pairOnly bool) (uint32, error) {
	span := uint32(ctProbe)
	if pairOnly {
		span = 2
	}
	return t.insertIn(k, e, addr, now, timeouts, span, 0)
}

// insertOwned is insert of a reverse entry node owner made. It may go
// anywhere on its key's probe, where lookups find it: the home pair
// rule is the local port allocator's, and this node allocates no port of
// another node's local IPs (and could not choose another port when the
// pair is taken: the owner chose it in its own table).
func (t *ctTable) insertOwned(k ctKey, e xlbCtEntry, addr [4]uint32, now uint32, timeouts ctTimeouts, owner uint16) (uint32, error) {
	return t.insertIn(k, e, addr, now, timeouts, ctProbe, owner)
}

func (t *ctTable) insertIn(k ctKey, e xlbCtEntry, addr [4]uint32, now uint32, timeouts ctTimeouts, span uint32, owner uint16) (uint32, error) {
	for range 4 { // a CPU may claim the same slot first
		if _, ok, _, _ := t.find(k, now, timeouts, ctProbe); ok {
			return 0, errConnExists
		}
		_, _, free, hasFree := t.find(k, now, timeouts, span)
		if !hasFree {
			return 0, errTableFull
		}
		if t.claim(free, now, timeouts) {
			t.publishOwned(free, k, e, addr, owner)
			return free, nil
		}
	}
	return 0, errTableFull
}
