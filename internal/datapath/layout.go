// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// layoutMapName is the pinned map that stamps every other pinned map with
// the layout this build gave it. The kernel only compares a pinned map's
// type and sizes with the object's, so a value whose fields moved but kept
// their size would load silently and be misread; the stamp catches it.
const layoutMapName = "xlb_layout"

// layoutMapSpec is the stamp map: map name -> layout hash.
var layoutMapSpec = ebpf.MapSpec{
	Name:       layoutMapName,
	Type:       ebpf.Hash,
	KeySize:    layoutKeySize,
	ValueSize:  8,
	MaxEntries: 64,
	Pinning:    ebpf.PinByName,
}

const layoutKeySize = 32 // a map name, NUL padded

// LayoutError says that maps pinned by a previous run have another layout
// than this build's: the daemon must not reuse them as they are.
type LayoutError struct {
	PinPath string
	Maps    []string // the incompatible maps, by name
	Unknown bool     // there is no stamp at all (pins of an xlb before stamps)
}

func (e *LayoutError) Error() string {
	why := "another layout"
	if e.Unknown {
		why = "no layout stamp (an xlb from before stamps)"
	}
	return fmt.Sprintf("maps pinned in %s have %s than this xlb's: %s; "+
		"start once with --drop-incompatible-maps to replace them (connections held in a replaced connection "+
		"table are lost) or remove the old data path with `xlb datapath detach --pin-path %s`",
		e.PinPath, why, strings.Join(e.Maps, ", "), e.PinPath)
}

// checkLayout compares the maps pinned in pinPath with spec's. With drop,
// the incompatible pins are removed (the load then creates new maps) and
// their names returned: a connection table alone when only connection
// tables differ (a resize), else every pinned map. Without, they are a
// *LayoutError.
func checkLayout(spec *ebpf.CollectionSpec, pinPath string, drop bool) ([]string, error) {
	stamps, known, err := readStamps(pinPath)
	if err != nil {
		return nil, err
	}
	var bad []string
	for name, ms := range spec.Maps {
		if ms.Pinning != ebpf.PinByName {
			continue
		}
		if _, err := os.Stat(filepath.Join(pinPath, name)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if have, ok := stamps[name]; !ok || have != layoutStamp(ms) {
			bad = append(bad, name)
		}
	}
	slices.Sort(bad)
	if len(bad) == 0 {
		return nil, nil
	}
	if !drop {
		return nil, &LayoutError{PinPath: pinPath, Maps: bad, Unknown: !known}
	}
	if slices.ContainsFunc(bad, func(name string) bool { return name != xlbMapCt4 && name != xlbMapCt6 }) {
		// the maps name each other's entries by id (connections name
		// services, reals and local IPs; stats and tables are by service
		// id): one of them replaced, the others would be misread, so
		// every pinned map is replaced and the data path starts afresh
		bad = bad[:0]
		for name, ms := range spec.Maps {
			if ms.Pinning != ebpf.PinByName {
				continue
			}
			if _, err := os.Stat(filepath.Join(pinPath, name)); err == nil {
				bad = append(bad, name)
			}
		}
		slices.Sort(bad)
	}
	for _, name := range bad {
		if err := os.Remove(filepath.Join(pinPath, name)); err != nil {
			return nil, fmt.Errorf("drop incompatible pinned map: %w", err)
		}
	}
	return bad, nil
}

// readStamps reads the stamp map pinned in pinPath; known is false when
// there is none.
func readStamps(pinPath string) (stamps map[string]uint64, known bool, err error) {
	stamps = map[string]uint64{}
	m, err := ebpf.LoadPinnedMap(filepath.Join(pinPath, layoutMapName), nil)
	if errors.Is(err, os.ErrNotExist) {
		return stamps, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read layout stamps: %w", err)
	}
	defer m.Close()
	var key [layoutKeySize]byte
	var val uint64
	it := m.Iterate()
	for it.Next(&key, &val) {
		stamps[strings.TrimRight(string(key[:]), "\x00")] = val
	}
	if err := it.Err(); err != nil {
		return nil, false, fmt.Errorf("read layout stamps: %w", err)
	}
	return stamps, true, nil
}

// writeStamps records the layout of every pinned map of spec.
func writeStamps(spec *ebpf.CollectionSpec, pinPath string) error {
	m, err := ebpf.NewMapWithOptions(&layoutMapSpec, ebpf.MapOptions{PinPath: pinPath})
	if err != nil {
		return fmt.Errorf("layout stamps: %w", err)
	}
	defer m.Close()
	for name, ms := range spec.Maps {
		if ms.Pinning != ebpf.PinByName {
			continue
		}
		var key [layoutKeySize]byte
		copy(key[:], name)
		if err := m.Put(key, layoutStamp(ms)); err != nil {
			return fmt.Errorf("stamp the layout of %s: %w", name, err)
		}
	}
	return nil
}

// layoutStamp hashes what a map's users depend on: its type, sizes,
// flags and the BTF layout of its key and value (field names, offsets,
// sizes and types), and those of an inner map.
func layoutStamp(ms *ebpf.MapSpec) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, layoutString(ms))
	return h.Sum64()
}

func layoutString(ms *ebpf.MapSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v k%d v%d n%d f%#x key:", ms.Type, ms.KeySize, ms.ValueSize, ms.MaxEntries, ms.Flags)
	writeType(&b, ms.Key, 0)
	b.WriteString(" value:")
	writeType(&b, ms.Value, 0)
	if ms.InnerMap != nil {
		fmt.Fprintf(&b, " inner:(%s)", layoutString(ms.InnerMap))
	}
	return b.String()
}

// writeType writes the memory layout of t: names of struct members are
// in, names of types are not (a rename alone changes nothing stored).
func writeType(b *strings.Builder, t btf.Type, depth int) {
	if t == nil {
		b.WriteString("?")
		return
	}
	if depth > 16 {
		b.WriteString("...")
		return
	}
	switch v := btf.UnderlyingType(t).(type) {
	case *btf.Int:
		fmt.Fprintf(b, "i%d%s", v.Size*8, v.Encoding)
	case *btf.Enum:
		fmt.Fprintf(b, "e%d", v.Size*8)
	case *btf.Pointer:
		b.WriteString("ptr")
	case *btf.Array:
		fmt.Fprintf(b, "[%d]", v.Nelems)
		writeType(b, v.Type, depth+1)
	case *btf.Struct:
		writeMembers(b, "s", v.Size, v.Members, depth)
	case *btf.Union:
		writeMembers(b, "u", v.Size, v.Members, depth)
	default:
		fmt.Fprintf(b, "%T", v)
	}
}

func writeMembers(b *strings.Builder, kind string, size uint32, members []btf.Member, depth int) {
	fmt.Fprintf(b, "%s%d{", kind, size)
	for _, m := range members {
		fmt.Fprintf(b, "%s@%d", m.Name, m.Offset)
		if m.BitfieldSize > 0 {
			fmt.Fprintf(b, ":%d", m.BitfieldSize)
		}
		b.WriteString("=")
		writeType(b, m.Type, depth+1)
		b.WriteString(";")
	}
	b.WriteString("}")
}
