// SPDX-License-Identifier: Apache-2.0

package run

import (
	"fmt"
	"slices"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
)

// keepFree is the memory a bench run leaves the machine: it never
// creates tables that would take it below this.
const keepFree = 8 << 30

// conntrackEntryBytes is what nft's conntrack takes per connection: its
// slab object (320 bytes on this kernel) with its extensions and hash
// bucket, rounded up.
const conntrackEntryBytes = 512

// xlbTablesBytes is the memory of the xlb DUT's connection tables: an
// IPv4 one for table connections and the default IPv6 one.
func xlbTablesBytes(table int) uint64 {
	return datapath.ConnTableBytes(false, uint32(table)) + datapath.ConnTableBytes(true, datapath.DefaultConns6)
}

// ccMemory is what holding n connections takes through a DUT: the
// client endpoint's slots and the DUT's table (xlb's preallocated IPv4
// and IPv6 tables for its shape, conntrack's entries for nft).
func ccMemory(dut string, n int, o bench.Options) uint64 {
	mem := uint64(n) * endpoint.SlotBytes
	switch dut {
	case "xlb":
		o.Conns = []int{n}
		mem += xlbTablesBytes(bench.XLBShapeFor("cc", o).ConnTable)
	case "nft":
		mem += uint64(n) * conntrackEntryBytes
	}
	return mem
}

// fitConns returns the cc sizes that fit in avail bytes of available
// memory with keepFree to spare for every DUT, and a note for each it
// left out. When the largest size asked does not fit, the largest that
// does (in steps of 100,000) takes its place, as the run on a machine
// too small for 10M should say and do.
func fitConns(o bench.Options, avail uint64) (kept []int, notes []string) {
	fits := func(n int) bool {
		for _, d := range o.DUTs {
			if ccMemory(d, n, o)+keepFree > avail {
				return false
			}
		}
		return true
	}
	gib := func(b uint64) float64 { return float64(b) / (1 << 30) }
	for _, n := range o.Conns {
		if fits(n) {
			kept = append(kept, n)
			continue
		}
		need := uint64(0)
		for _, d := range o.DUTs {
			need = max(need, ccMemory(d, n, o))
		}
		note := fmt.Sprintf("%d connections need %.1f GiB (the DUT's tables and the client's slots); this machine has %.1f GiB available "+
			"and a run keeps %.0f GiB free: left out", n, gib(need), gib(avail), gib(keepFree))
		if n == slices.Max(o.Conns) {
			largest := 0
			for m := 100_000; m < n && fits(m); m += 100_000 {
				largest = m
			}
			if largest > 0 && !slices.Contains(kept, largest) {
				kept = append(kept, largest)
				note += fmt.Sprintf("; %d, the largest that fits, runs instead", largest)
			}
		}
		notes = append(notes, note)
	}
	return kept, notes
}

// checkFrameMemory refuses a frame scenario whose xlb DUT's tables (a
// table for more flows than the default holds) do not fit in avail with
// keepFree to spare.
func checkFrameMemory(scenario string, o bench.Options, avail uint64) error {
	if !slices.Contains(o.DUTs, "xlb") {
		return nil
	}
	table := bench.XLBShapeFor(scenario, o).ConnTable
	if table == 0 {
		return nil
	}
	if need := xlbTablesBytes(table); need+keepFree > avail {
		return fmt.Errorf("%d flows: the xlb DUT's tables for %d connections need %.1f GiB; this machine has %.1f GiB "+
			"available and a run keeps %.0f GiB free: ask fewer --flows", slices.Max(o.Flows), table,
			float64(need)/(1<<30), float64(avail)/(1<<30), float64(keepFree)/(1<<30))
	}
	return nil
}
