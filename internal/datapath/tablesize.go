// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// The connection tables take their memory when they are created: the
// kernel allocates an mmapable array's pages at once. Load refuses sizes
// the machine cannot hold and tells a resize apart from other layout
// changes, so that the operator reads what to do.

// ResizeError says that a pinned connection table has another size than
// the one asked for. The pinned table keeps its connections; resizing it
// replaces it (Options.DropIncompatible), and they are lost.
type ResizeError struct {
	PinPath string
	Family  string // FamilyIPv4 or FamilyIPv6
	Have    uint32 // connections the pinned table is sized for
	Want    uint32
}

func (e *ResizeError) Error() string {
	return fmt.Sprintf("the %s connection table pinned in %s is sized for %d connections and the configuration asks for %d "+
		"(conn_table.%s): start once with --drop-incompatible-maps to resize it, which resets the connections it holds, "+
		"or keep conn_table.%s at %d", e.Family, e.PinPath, e.Have, e.Want, e.Family, e.Family, e.Have)
}

// MemoryError says that the connection tables to create need more memory
// than the machine has available.
type MemoryError struct {
	Tables    []ConnTableSize // the tables to create
	Available uint64          // MemAvailable, in bytes
}

func (e *MemoryError) Error() string {
	var need uint64
	parts := make([]string, len(e.Tables))
	for i, t := range e.Tables {
		need += t.Bytes
		parts[i] = fmt.Sprintf("%s %d connections %s", t.Family, t.Conns, mib(t.Bytes))
	}
	return fmt.Sprintf("the connection tables need %s (%s) and the machine has %s available (MemAvailable): "+
		"lower conn_table or free memory", mib(need), strings.Join(parts, ", "), mib(e.Available))
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// connsOfSlots is the size in connections a table of slots map entries
// was created for: the inverse of CtSlots (which rounds up by less than
// two slots, so the floor is exact).
func connsOfSlots(entries uint32) uint32 {
	return uint32(uint64(entries-ctProbe) * ctSlotsPerConnDen / ctSlotsPerConnNum)
}

// checkTables compares the connection tables of spec (sized for conns)
// with those pinned in pinPath ("" for none) and the tables to create
// with the memory available. A pinned table of another size is a
// *ResizeError unless drop is set (checkLayout then replaces it).
func checkTables(spec *ebpf.CollectionSpec, pinPath string, conns [2]uint32, drop bool) error {
	var create []ConnTableSize
	for i, name := range []string{xlbMapCt4, xlbMapCt6} {
		ms := spec.Maps[name]
		if pinPath != "" && ms.Pinning == ebpf.PinByName {
			have, err := pinnedEntries(filepath.Join(pinPath, name))
			if err != nil {
				return err
			}
			if have == ms.MaxEntries {
				continue // reused as it is: no new memory
			}
			if have != 0 && !drop {
				return &ResizeError{PinPath: pinPath, Family: ctFamilies[i], Have: connsOfSlots(have), Want: conns[i]}
			}
		}
		create = append(create, ConnTableSize{Family: ctFamilies[i], Conns: conns[i], Slots: ms.MaxEntries - ctProbe,
			Bytes: ConnTableBytes(i == 1, conns[i])})
	}
	if len(create) == 0 {
		return nil
	}
	avail, err := MemAvailable()
	if err != nil {
		return err
	}
	var need uint64
	for _, t := range create {
		need += t.Bytes
	}
	if need > avail {
		return &MemoryError{Tables: create, Available: avail}
	}
	return nil
}

// pinnedEntries is the max entries of the map pinned at path, 0 when
// there is none.
func pinnedEntries(path string) (uint32, error) {
	m, err := ebpf.LoadPinnedMap(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read pinned map: %w", err)
	}
	defer m.Close()
	return m.MaxEntries(), nil
}

// MemAvailable reads MemAvailable from /proc/meminfo, in bytes: what the
// kernel can give without swapping.
func MemAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read available memory: %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read available memory: no MemAvailable in /proc/meminfo: %v", sc.Err())
}
