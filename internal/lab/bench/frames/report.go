// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// LineRates are the reference line rates of the frame-size tables, in
// Gbit/s.
var LineRates = []float64{10, 25, 40, 100}

// LineRatePPS is the theoretical frame rate of a link: each frame also
// occupies 20 bytes of preamble and inter-frame gap.
func LineRatePPS(gbps float64, size int) float64 {
	return gbps * 1e9 / ((traffic.MeanSize(size) + 20) * 8)
}

func mpps(v float64) string { return fmt.Sprintf("%.3f", v/1e6) }

// ratio is a / b as "1.23x", or "-".
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// find returns the first valid trial matching.
func (r *Report) find(match func(Trial) bool) (Trial, bool) {
	for _, t := range r.Trials {
		if t.Valid && match(t) {
			return t, true
		}
	}
	return Trial{}, false
}

func (r *Report) searchOf(dut, kind string, size, flows int, vary string) (SearchRecord, bool) {
	for _, s := range r.Searches {
		if s.DUT == dut && s.Kind == kind && s.Size == size && s.Flows == flows && s.Vary == vary {
			return s, true
		}
	}
	return SearchRecord{}, false
}

// WriteTables writes the frame scenario's reference tables.
func (r *Report) WriteTables(w io.Writer) {
	switch r.Scenario {
	case "pps":
		r.ppsTable(w)
	case "frame-sizes":
		r.frameSizeTables(w)
		r.dpvsLossTables(w)
	case "rfc2544":
		r.rfc2544Table(w)
		r.finalTrials(w)
	case "multiflow":
		r.multiflowTables(w)
		r.curveTables(w)
	}
}

// WriteLoss lists where the loss of the maximum-rate and fixed-rate
// trials happened, and the invalid trials with why.
func (r *Report) WriteLoss(w io.Writer) {
	var lossy []string
	for _, t := range r.Trials {
		if t.Valid && t.Lost > 0 && (t.Role == "max" || t.Role == "fixed") {
			lossy = append(lossy, fmt.Sprintf("- %s %s %s B %d flows: %d lost = %d no room in the DUT's receive ring + %d no room in a real's ring + %d in the DUT%s",
				t.DUT, t.Role, traffic.SizeName(t.Size), t.Flows, t.Lost, t.RingDropsIn, t.RingDropsOut, t.Lost-min(t.Lost, t.RingDropsIn+t.RingDropsOut), dropNote(t.DUTDrops)))
		}
	}
	if len(lossy) > 0 {
		fmt.Fprintf(w, "\nWhere the loss happened:\n%s\n", strings.Join(lossy, "\n"))
	}
	var invalid []string
	for _, t := range r.Trials {
		if !t.Valid {
			invalid = append(invalid, fmt.Sprintf("- %s %s %s B %d flows at %s Mpps: %s", t.DUT, t.Role, traffic.SizeName(t.Size), t.Flows, mpps(t.AskedPPS), t.Invalid))
		}
	}
	if len(invalid) > 0 {
		fmt.Fprintf(w, "\nInvalid trials (no figures taken from them):\n%s\n", strings.Join(invalid, "\n"))
	}
}

// ppsTable is the DPVS UDP PPS table: forwarding rate per DUT and flow count.
func (r *Report) ppsTable(w io.Writer) {
	fmt.Fprintln(w, "## UDP PPS, 64-byte frames, as fast as the generator goes")
	fmt.Fprintln(w, "\n| DUT | flows | Tx Mpps | Rx Mpps | loss % | vs xdp-fixed | vs xdp-fwd | vs nft |\n|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, flows := range r.Options.Flows {
		ref := map[string]float64{}
		for _, d := range []string{"xdp-fixed", "xdp-fwd", "nft"} {
			if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "max" }); ok {
				ref[d] = t.RxPPS
			}
		}
		for _, d := range r.Options.DUTs {
			t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "max" })
			if !ok {
				fmt.Fprintf(w, "| %s | %d | invalid | | | | | |\n", d, flows)
				continue
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %.3f | %s | %s | %s |\n", d, flows, mpps(t.TxPPS), mpps(t.RxPPS), t.LossPct,
				ratio(t.RxPPS, ref["xdp-fixed"]), ratio(t.RxPPS, ref["xdp-fwd"]), ratio(t.RxPPS, ref["nft"]))
		}
	}
	r.answeredTable(w)
	r.workersTable(w)
	r.dramReads(w)
}

// answeredTable is the DPVS report's UDP PPS table, both directions:
// the reals answer every frame back through the DUT to the client.
func (r *Report) answeredTable(w io.Writer) {
	var rows []string
	for _, flows := range r.Options.Flows {
		ref := map[string]float64{}
		for _, d := range []string{"xdp-fixed", "nft"} {
			if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "both" }); ok {
				ref[d] = t.TxPPS + t.RxPPS
			}
		}
		for _, d := range r.Options.DUTs {
			t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == flows && t.Role == "both" })
			if !ok {
				continue
			}
			in, out := t.TxPPS+t.RxPPS, t.RxPPS+t.ReturnPPS
			lost := 100 * float64(t.Sent-t.Returned) / float64(max(t.Sent, 1))
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %.3f | %s | %s |", d, flows, mpps(in), mpps(out),
				mpps(t.TxPPS), mpps(t.ReturnPPS), lost, ratio(in, ref["xdp-fixed"]), ratio(in, ref["nft"])))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## UDP PPS in both directions (the DPVS report's table)\n\nEvery real answers each frame (MACs, "+
		"addresses and ports swapped) back through the DUT to the client; flows are client ports (%d at most). ipackets "+
		"and opackets are what went into and out of the DUT: the client's frames and the answers.\n\n"+
		"| DUT | flows | ipackets Mpps | opackets Mpps | client Tx Mpps | client Rx Mpps | lost round trip %% | vs xdp-fixed | vs nft |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n%s\n", maxAnsweredFlows, strings.Join(rows, "\n"))
}

// dramReads says what many flows cost each frame, in random reads from
// memory measured in the same run: the time per received frame at the
// most flows less that at the fewest, over one read's latency.
func (r *Report) dramReads(w io.Writer) {
	d := r.DRAMRead
	if d == nil || len(r.Options.Flows) < 2 {
		return
	}
	few, many := slices.Min(r.Options.Flows), slices.Max(r.Options.Flows)
	fmt.Fprintf(w, "\nOne dependent random read over %.0f MiB (4 KiB pages; the xlb DUT's IPv4 connection table), "+
		"in this run: %.1f ns.\n\n| DUT | ns per frame, %d flows | ns per frame, %d flows | more per frame | in random reads |\n|---|---:|---:|---:|---:|\n",
		float64(d.RegionBytes)/(1<<20), d.ReadNs, few, many)
	for _, name := range r.Options.DUTs {
		a, okA := r.find(func(t Trial) bool { return t.DUT == name && t.Flows == few && t.Role == "max" && t.RxPPS > 0 })
		b, okB := r.find(func(t Trial) bool { return t.DUT == name && t.Flows == many && t.Role == "max" && t.RxPPS > 0 })
		if !okA || !okB {
			continue
		}
		nsA, nsB := 1e9/a.RxPPS, 1e9/b.RxPPS
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.2f |\n", name, nsA, nsB, nsB-nsA, (nsB-nsA)/d.ReadNs)
	}
}

// frameSizeTables are the DPVS v0.4 loss and throughput tables.
func (r *Report) frameSizeTables(w io.Writer) {
	fmt.Fprintf(w, "## Loss at a fixed offered rate (%s Mpps)\n\n", mpps(r.Options.FixedRate))
	fmt.Fprintln(w, "| frame B | DUT | offered Mpps | Rx Mpps | loss % |\n|---:|---|---:|---:|---:|")
	for _, size := range r.Options.Sizes {
		for _, d := range r.Options.DUTs {
			if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Size == size && t.Role == "fixed" }); ok {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f |\n", traffic.SizeName(size), d, mpps(t.TxPPS), mpps(t.RxPPS), t.LossPct)
			} else {
				fmt.Fprintf(w, "| %s | %s | invalid | | |\n", traffic.SizeName(size), d)
			}
		}
	}
	fmt.Fprintln(w, "\n## Throughput as fast as the generator goes, with theoretical line rates")
	head := "| frame B | DUT | Rx Mpps | Rx Gbps | loss % |"
	sep := "|---:|---|---:|---:|---:|"
	for _, g := range LineRates {
		head += fmt.Sprintf(" %gG line Mpps |", g)
		sep += "---:|"
	}
	fmt.Fprintf(w, "\n%s\n%s\n", head, sep)
	for _, size := range r.Options.Sizes {
		for _, d := range r.Options.DUTs {
			t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Size == size && t.Role == "max" })
			if !ok {
				fmt.Fprintf(w, "| %s | %s | invalid | | |%s\n", traffic.SizeName(size), d, strings.Repeat(" |", len(LineRates)))
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %.3f |", traffic.SizeName(size), d, mpps(t.RxPPS), t.RxMbps/1e3, t.LossPct)
			for _, g := range LineRates {
				fmt.Fprintf(w, " %s |", mpps(LineRatePPS(g, size)))
			}
			fmt.Fprintln(w)
		}
	}
}

// dpvsLossTables are the DPVS v0.4 report's loss table in its layout,
// a table per DUT with the frame sizes as columns, from the trials as
// fast as the generator goes: frames and megabits on the wire (with
// preamble and gap, 20 bytes a frame) sent and received over the trial,
// the loss, the theoretical 10G rate and the rate forwarded.
func (r *Report) dpvsLossTables(w io.Writer) {
	sink, haveSink := map[int]float64{}, false
	for _, size := range r.Options.Sizes {
		if t, ok := r.find(func(t Trial) bool { return t.DUT == "sink" && t.Size == size && t.Role == "max" }); ok {
			sink[size], haveSink = t.TxPPS, true
		}
	}
	fmt.Fprintln(w, "\n## Loss at the limit (the DPVS v0.4 report's tables)")
	if haveSink {
		fmt.Fprintln(w, "\nThe limit is the generator as fast as it goes; the sink row says how fast that is into an XDP "+
			"sink, in the same run. On veth the generator's CPU runs the DUT too, so it sends only as fast as the DUT "+
			"takes frames: a DUT's TX below the sink's is the generator held back, not frames lost.")
	}
	for _, d := range r.Options.DUTs {
		var cols []Trial
		for _, size := range r.Options.Sizes {
			if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Size == size && t.Role == "max" }); ok {
				cols = append(cols, t)
			}
		}
		if len(cols) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n\n| PktSize/byte |", d)
		for _, t := range cols {
			fmt.Fprintf(w, " %s |", traffic.SizeName(t.Size))
		}
		fmt.Fprintf(w, "\n|----|%s\n", strings.Repeat("----|", len(cols)))
		wire := func(frames uint64, size int) float64 {
			return float64(frames) * (traffic.MeanSize(size) + 20) * 8 / 1e6
		}
		rows := []struct {
			name string
			v    func(Trial) string
		}{
			{"TX/Pkts", func(t Trial) string { return fmt.Sprint(t.Sent) }},
			{"TX/Mbits", func(t Trial) string { return fmt.Sprintf("%.0f", wire(t.Sent, t.Size)) }},
			{"RX/Pkts", func(t Trial) string { return fmt.Sprint(t.Received) }},
			{"RX/Mbits", func(t Trial) string { return fmt.Sprintf("%.0f", wire(t.Received, t.Size)) }},
			{"Loss Rate/%", func(t Trial) string { return fmt.Sprintf("%.3f", t.LossPct) }},
			{"Theoretical 10G/Mpps", func(t Trial) string { return mpps(LineRatePPS(10, t.Size)) }},
			{"Actual value/Mpps", func(t Trial) string { return mpps(t.RxPPS) }},
		}
		if haveSink && d != "sink" {
			rows = append(rows, struct {
				name string
				v    func(Trial) string
			}{"TX / sink's", func(t Trial) string { return ratio(t.TxPPS, sink[t.Size]) }})
		}
		for _, row := range rows {
			fmt.Fprintf(w, "| %s |", row.name)
			for _, t := range cols {
				fmt.Fprintf(w, " %s |", row.v(t))
			}
			fmt.Fprintln(w)
		}
	}
}

// rfc2544Table is the NDR/PDR table of TRex and VSPERF.
func (r *Report) rfc2544Table(w io.Writer) {
	fmt.Fprintf(w, "## RFC 2544: NDR (no loss) and PDR (loss <= %g%%)\n\n", r.Options.LossTolerance)
	fmt.Fprintln(w, "| DUT | frame B | NDR Mpps | NDR Gbps | PDR Mpps | max Mpps | loss at max % | NDR vs xdp-fixed | NDR vs xdp-fwd | trials | verified |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, d := range r.Options.DUTs {
		for _, size := range r.Options.Sizes {
			ndr, ok1 := r.searchOf(d, "ndr", size, 1, "")
			pdr, ok2 := r.searchOf(d, "pdr", size, 1, "")
			if !ok1 || !ok2 {
				continue
			}
			fixed, _ := r.searchOf("xdp-fixed", "ndr", size, 1, "")
			fwd, _ := r.searchOf("xdp-fwd", "ndr", size, 1, "")
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %s | %.3f | %s | %s | %d+%d | %v |\n", d, traffic.SizeName(size), mpps(ndr.RatePPS),
				ndr.RatePPS*traffic.MeanSize(size)*8/1e9, mpps(pdr.RatePPS), mpps(ndr.MaxPPS), ndr.LossAtMaxPct,
				ratio(ndr.RatePPS, fixed.RatePPS), ratio(ndr.RatePPS, fwd.RatePPS), ndr.Iterations, pdr.Iterations, ndr.Verified && pdr.Verified)
		}
	}
}

// multiflowTables are VSPERF's multi-flow matrix: NDR per variation and
// flow count.
func (r *Report) multiflowTables(w io.Writer) {
	if BothWays(r.Scenario, r.Options) {
		fmt.Fprint(w, "Both directions, as VSPERF's tests: the reals answer every frame (MACs, addresses and ports swapped) "+
			"back through the DUT to the client, and a frame counts as lost unless its answer came back. A cell is the "+
			"frames the DUT forwarded at the NDR, both directions together (VSPERF's Rx fps, the sum of both ports): "+
			"twice the rate the client offered, since at the NDR every frame and its answer arrived. Varied client "+
			"addresses (l3-src) come from a block the balancer routes back to the client.\n\n")
	}
	fmt.Fprintf(w, "Every trial offers each of its flows at least once, as VSPERF's 60 s trials do: one too short for that "+
		"is stretched, up to %d times its length, and a paced one that would need more is not run (its search counts it "+
		"as failed).\n\n", maxStretch)
	if r.Forgotten > 0 {
		fmt.Fprintf(w, "Each cell started on a DUT that held no flows, as VSPERF starts each test on a fresh switch (%d times): "+
			"xlb restarted without its connections, nft's conntrack flushed. UDP flows are kept a minute, and a cell of 1M "+
			"flows would leave the next a full table.\n\n", r.Forgotten)
	}
	for _, size := range r.Options.Sizes {
		for _, d := range r.Options.DUTs {
			fmt.Fprintf(w, "## %s, %s-byte frames: %s by flow variation and flow count\n\n", d, traffic.SizeName(size), r.ndrUnit())
			head, sep := "| variation |", "|---|"
			for _, f := range r.Options.Flows {
				head += fmt.Sprintf(" %s |", flowLabel(f))
				sep += "---:|"
			}
			fmt.Fprintf(w, "%s\n%s\n", head, sep)
			for _, v := range r.Options.Variations {
				fmt.Fprintf(w, "| %s |", v)
				for _, f := range r.Options.Flows {
					if s, ok := r.searchOf(d, "ndr", size, f, v); ok {
						fmt.Fprintf(w, " %s |", mpps(r.ndrRx(s)))
					} else if slices.ContainsFunc(r.Skipped, func(k Skip) bool { return k.DUT == d && k.Size == size && k.Vary == v && k.Flows == f }) {
						fmt.Fprint(w, " n/a |")
					} else {
						fmt.Fprint(w, " - |")
					}
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w)
		}
	}
	whys := map[string]bool{}
	for _, s := range r.Skipped {
		whys[s.Why] = true
	}
	if len(whys) > 0 {
		fmt.Fprintln(w, "n/a: not measured because")
		for why := range whys {
			fmt.Fprintf(w, "- %s\n", why)
		}
	}
	r.finalTrials(w)
}

// finalTrials sums up the searches' long verification trials and names
// those that did not pass.
func (r *Report) finalTrials(w io.Writer) {
	var n, passed, unpaced int
	var secs float64
	var failed []string
	for _, s := range r.Searches {
		if s.Final == nil {
			continue
		}
		n, secs = n+1, s.Final.Seconds
		if s.Final.Unpaced {
			unpaced++
		}
		if s.Final.Passed {
			passed++
			continue
		}
		why := fmt.Sprintf("%.3f%% lost", s.Final.LossPct)
		if !s.Final.Valid {
			why = "the generator could not offer the rate"
		}
		failed = append(failed, fmt.Sprintf("- %s %s %s B %d flows %s at %s Mpps: %s", s.DUT, s.Kind, traffic.SizeName(s.Size), s.Flows, s.Vary, mpps(s.RatePPS), why))
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\nFinal verification trials of %gs at each rate found: %d of %d passed.\n", secs, passed, n)
	if unpaced > 0 {
		fmt.Fprintf(w, "%d of them ran as fast as the generator goes, as their searches passed there: paced at its own limit "+
			"the generator cannot offer that rate.\n", unpaced)
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "%s\n", strings.Join(failed, "\n"))
	}
}

// dropNote lists a DUT's own drop counters, e.g. " (xlb: no_lport 12)".
func dropNote(drops map[string]uint64) string {
	if len(drops) == 0 {
		return ""
	}
	var parts []string
	for reason, n := range drops {
		parts = append(parts, fmt.Sprintf("%s %d", reason, n))
	}
	slices.Sort(parts)
	return " (its counters: " + strings.Join(parts, ", ") + ")"
}

func flowLabel(f int) string {
	switch {
	case f >= 1_000_000 && f%1_000_000 == 0:
		return fmt.Sprintf("%dM", f/1_000_000)
	case f >= 1000 && f%1000 == 0:
		return fmt.Sprintf("%dk", f/1000)
	case f == 65536:
		return "64k"
	}
	return fmt.Sprint(f)
}

// ndrRx is what a multi-flow cell shows of its NDR search: the frames
// the DUT forwarded per second. Both ways that is twice the offered
// rate, exactly: at the NDR no frame and no answer was lost.
func (r *Report) ndrRx(s SearchRecord) float64 {
	if BothWays(r.Scenario, r.Options) {
		return 2 * s.RatePPS
	}
	return s.RatePPS
}

// ndrUnit names ndrRx's figures.
func (r *Report) ndrUnit() string {
	if BothWays(r.Scenario, r.Options) {
		return "NDR Rx Mpps (both directions)"
	}
	return "NDR Mpps"
}
