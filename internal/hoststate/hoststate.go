// SPDX-License-Identifier: Apache-2.0

// Package hoststate records what the daemon added to the host (addresses,
// neighbour entries) next to the data path's pins, in a pinned BPF map, so
// that a daemon started after a crash finds what the dead one added: it
// takes over what it still wants and removes the rest, and a stop removes
// all of it. The record lives as long as the pins do (both go at reboot).
//
// Entries are written before the host is changed and removed after, so a
// crash between the two leaves a record of something absent (harmless: its
// removal finds nothing) and never a change without a record.
package hoststate

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
)

// Kind is what a record entry is.
type Kind uint8

// The kinds of host change the daemon records.
const (
	Address   Kind = 1 // an address on a device (ip addr add)
	Neighbour Kind = 2 // a managed neighbour entry (ip neigh replace)
	// NodeDrained says the node is drained (xlb node drain). It changes
	// nothing on the host; it is kept here so that a drain outlives a
	// hand-over or a crash as the record does (Drained is its entry).
	NodeDrained Kind = 3
)

// Drained is the entry of a drained node.
var Drained = Entry{Kind: NodeDrained, Dev: "node", Addr: netip.IPv4Unspecified()}

func (k Kind) String() string {
	switch k {
	case Address:
		return "address"
	case Neighbour:
		return "neighbour"
	case NodeDrained:
		return "drained"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Entry is one change to the host.
type Entry struct {
	Kind Kind
	Dev  string
	Addr netip.Addr
}

func (e Entry) String() string { return fmt.Sprintf("%s %s dev %s", e.Kind, e.Addr, e.Dev) }

// MapName is the pinned map's name in the pin directory.
const MapName = "xlb_host_state"

const devLen = 16 // IFNAMSIZ

// key is the map key: the entry itself. Addresses are stored as 16 bytes,
// IPv4 as IPv4-mapped.
type key struct {
	Kind Kind
	_    [3]byte
	Dev  [devLen]byte
	Addr [16]byte
}

var mapSpec = ebpf.MapSpec{
	Name:       MapName,
	Type:       ebpf.Hash,
	KeySize:    4 + devLen + 16,
	ValueSize:  4,
	MaxEntries: 1 << 17, // addresses plus up to the neighbour manager's 65536 requests
	Flags:      1,       // BPF_F_NO_PREALLOC: memory only for what is recorded
	Pinning:    ebpf.PinByName,
}

// Record is the daemon's record of its changes to the host. Its methods
// are safe for concurrent use.
type Record struct {
	mu  sync.Mutex
	m   *ebpf.Map      // nil: in memory only
	mem map[Entry]bool // always kept, the map mirrors it
}

// Open opens (or creates) the record pinned in pinPath; with pinPath ""
// the record is kept in memory only and dies with the process.
func Open(pinPath string) (*Record, error) {
	r := &Record{mem: map[Entry]bool{}}
	if pinPath == "" {
		return r, nil
	}
	m, err := ebpf.NewMapWithOptions(&mapSpec, ebpf.MapOptions{PinPath: pinPath})
	if err != nil {
		return nil, fmt.Errorf("host state record in %s: %w", pinPath, err)
	}
	r.m = m
	var k key
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		e, ok := k.entry()
		if !ok {
			continue // unreadable: skip rather than act on it
		}
		r.mem[e] = true
	}
	if err := it.Err(); err != nil {
		m.Close()
		return nil, fmt.Errorf("read host state record: %w", err)
	}
	return r, nil
}

// Peek reads the record pinned in pinPath without creating or keeping
// anything: an empty record when none is pinned there. It is for readers
// beside a daemon (xlb config check), which must not change the host.
func Peek(pinPath string) (*Record, error) {
	r := &Record{mem: map[Entry]bool{}}
	m, err := ebpf.LoadPinnedMap(filepath.Join(pinPath, MapName), &ebpf.LoadPinOptions{ReadOnly: true})
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("host state record in %s: %w", pinPath, err)
	}
	defer m.Close()
	var k key
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		if e, ok := k.entry(); ok {
			r.mem[e] = true
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read host state record: %w", err)
	}
	return r, nil
}

func keyOf(e Entry) (key, error) {
	if len(e.Dev) == 0 || len(e.Dev) >= devLen || strings.ContainsRune(e.Dev, 0) {
		return key{}, fmt.Errorf("record %s: device name %q is not a Linux interface name", e, e.Dev)
	}
	if !e.Addr.IsValid() {
		return key{}, fmt.Errorf("record %s: no address", e)
	}
	k := key{Kind: e.Kind, Addr: e.Addr.As16()}
	copy(k.Dev[:], e.Dev)
	return k, nil
}

func (k key) entry() (Entry, bool) {
	dev := strings.TrimRight(string(k.Dev[:]), "\x00")
	if dev == "" || (k.Kind != Address && k.Kind != Neighbour && k.Kind != NodeDrained) {
		return Entry{}, false
	}
	return Entry{Kind: k.Kind, Dev: dev, Addr: netip.AddrFrom16(k.Addr).Unmap()}, true
}

// Add records e; call it before making the change.
func (r *Record) Add(e Entry) error {
	return r.update(e, "record", func(k key) error { return r.m.Put(k, uint32(1)) }, func(e Entry) { r.mem[e] = true })
}

// Remove forgets e; call it after undoing the change.
func (r *Record) Remove(e Entry) error {
	return r.update(e, "forget", func(k key) error {
		if err := r.m.Delete(k); !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		return nil
	}, func(e Entry) { delete(r.mem, e) })
}

// update writes e's change to the pinned map (if any), then to memory.
func (r *Record) update(e Entry, verb string, pinned func(key) error, mem func(Entry)) error {
	e.Addr = e.Addr.Unmap()
	k, err := keyOf(e)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m != nil {
		if err := pinned(k); err != nil {
			return fmt.Errorf("%s %s: %w", verb, e, err)
		}
	}
	mem(e)
	return nil
}

// List returns the recorded entries of kind, sorted.
func (r *Record) List(kind Kind) []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	for e := range r.mem {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		return strings.Compare(a.Dev, b.Dev)
	})
	return out
}

// Close releases the map; the record stays pinned.
func (r *Record) Close() error {
	if r.m == nil {
		return nil
	}
	return r.m.Close()
}
