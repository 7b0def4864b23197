// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"fmt"
	"io"
	"slices"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// workersTable is the DPVS v1.9.2 UDP PPS table's layout, a row per
// worker count, for every DUT run with workers (NAME-wN): the round
// trip's packets in and out of the DUT and the client's, and the one-way
// rate beside them.
func (r *Report) workersTable(w io.Writer) {
	var bases []string
	for _, d := range r.Options.DUTs {
		if base, n := bench.SplitWorkers(d); n > 0 && !slices.Contains(bases, base) {
			bases = append(bases, base)
		}
	}
	if len(bases) == 0 {
		return
	}
	fmt.Fprintln(w, "\n## Worker scaling (the DPVS v1.9.2 UDP PPS table)\n\nA DUT named NAME-wN runs its data path on N worker "+
		"CPUs of its own (which ones: the DUT list above); NAME alone on the CPU that receives, on veth the generator's. "+
		"Both ways as in the table above; one way: the UDP PPS table's Rx.\n\n"+
		"| DUT | workers | flows | ipackets/pps | opackets/pps | client pktTx/s | client pktRx/s | lost round trip % | one way Rx pps | one way loss % |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, base := range bases {
		for _, flows := range r.Options.Flows {
			for _, d := range r.Options.DUTs {
				if b, n := bench.SplitWorkers(d); b == base {
					r.workersRow(w, d, n, flows)
				}
			}
		}
	}
}

// workersRow writes the row of DUT d with n workers at flows.
func (r *Report) workersRow(w io.Writer, d string, n, flows int) {
	workers := fmt.Sprint(n)
	if n == 0 {
		workers = "0 (receiving CPU)"
	}
	row := fmt.Sprintf("| %s | %s | %d |", d, workers, flows)
	if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "both" }); ok {
		lost := 100 * float64(t.Sent-t.Returned) / float64(max(t.Sent, 1))
		row += fmt.Sprintf(" %.0f | %.0f | %.0f | %.0f | %.3f |", t.TxPPS+t.RxPPS, t.RxPPS+t.ReturnPPS, t.TxPPS, t.ReturnPPS, lost)
	} else {
		row += " | | | | |"
	}
	if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "max" }); ok {
		row += fmt.Sprintf(" %.0f | %.3f |", t.RxPPS, t.LossPct)
	} else {
		row += " | |"
	}
	fmt.Fprintln(w, row)
}
