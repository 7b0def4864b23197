// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/xlb-dev/xlb/internal/api"
)

// writeLocalIPs prints the local IPs' section of `xlb stats`: how many new
// connections each turned away for want of a free port.
func writeLocalIPs(w io.Writer, ips []api.LocalIPStats) {
	if len(ips) == 0 {
		return
	}
	fmt.Fprintln(w, "\t")
	fmt.Fprintln(w, "local IP\tno_lport")
	for _, l := range ips {
		fmt.Fprintf(w, "%s\t%d\n", l.Address, l.NoLport)
	}
}

// writeConnTables prints the connection tables' section of `xlb stats`:
// how full each is and what it lost (docs/datapath.md, Connection table).
func writeConnTables(w io.Writer, tables []api.ConnTable) {
	if len(tables) == 0 {
		return
	}
	fmt.Fprintln(w, "conn table\tsize\tmemory\tentries\tlive\tmax\toccupancy\tinserts\tremovals\trefused\thalf_open_drops\treply_misses\tforward_misses")
	for _, t := range tables {
		fmt.Fprintf(w, "%s\t%d\t%.1f MiB\t%d\t%d\t%d\t%.1f%%\t%d\t%d\t%d\t%d\t%d\t%d\n", t.Family, t.Connections,
			float64(t.MemoryBytes)/(1<<20), t.Entries, t.LiveEntries, t.MaxEntries,
			100*t.Occupancy, t.Inserts, t.Removals, t.Refused, t.HalfOpenDrops, t.ReplyMisses, t.ForwardMisses)
	}
}
