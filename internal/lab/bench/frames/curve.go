// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
	"gonum.org/v1/plot/plotter"
)

// The VSPERF report's loss-versus-rate curve and frame latency, for one
// cell of the matrix per DUT (the first whose NDR was found): trials at
// curvePercents of the cell's maximum rate, and at latencyPercents of
// its NDR, every frame timed from the generator's XDP_TX to a sink.
var (
	curvePercents   = []int{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	latencyPercents = []int{10, 50, 90}
)

// The roles of those trials: "curve-PCT" and "latency-PCT".
const (
	curveRole   = "curve-"
	latencyRole = "latency-"
)

// curveTrials is how many trials curve adds per DUT (for the ETA).
var curveTrials = len(curvePercents) + len(latencyPercents)

// curve runs dut's curve and latency trials.
func (r *Runner) curve(ctx context.Context, dut bench.DUT) error {
	var cell SearchRecord
	for _, s := range r.res.Searches {
		if s.DUT == dut.Name() && s.Kind == "ndr" && s.RatePPS > 0 {
			cell = s
			break
		}
	}
	if cell.DUT == "" {
		r.planned -= curveTrials
		return nil
	}
	run := func(role string, pct int, of float64) error {
		s := r.spec(cell.Size, cell.Flows, cell.Vary, of*float64(pct)/100)
		s.Latency = true
		_, err := r.trial(ctx, dut, role+strconv.Itoa(pct), s)
		return err
	}
	for _, pct := range latencyPercents {
		if err := run(latencyRole, pct, cell.RatePPS); err != nil {
			return err
		}
	}
	for _, pct := range curvePercents {
		if err := run(curveRole, pct, cell.MaxPPS); err != nil {
			return err
		}
	}
	return nil
}

// rolePercent reads the percent of a curve or latency trial's role.
func rolePercent(role, prefix string) (int, bool) {
	if !strings.HasPrefix(role, prefix) {
		return 0, false
	}
	pct, err := strconv.Atoi(strings.TrimPrefix(role, prefix))
	return pct, err == nil
}

// curveTables writes the latency at 10, 50 and 90% of the NDR and the
// loss and latency against the offered rate.
func (r *Report) curveTables(w io.Writer) {
	us := func(ns float64) string { return fmt.Sprintf("%.1f", ns/1e3) }
	cell := func(t Trial) string {
		return fmt.Sprintf("%s B, %d flows %s", traffic.SizeName(t.Size), t.Flows, t.Vary)
	}
	var lat, curve []string
	for _, t := range r.Trials {
		if !t.Valid || t.Latency == nil {
			continue
		}
		l := t.Latency
		if pct, ok := rolePercent(t.Role, latencyRole); ok {
			lat = append(lat, fmt.Sprintf("| %s | %s | %d%% | %s | %.3f | %s | %s | %s | %s |", t.DUT, cell(t), pct, mpps(t.TxPPS), t.SearchLossPct(),
				us(l.MinNs), us(l.AvgNs), us(l.P99Ns), us(l.MaxNs)))
		}
		if pct, ok := rolePercent(t.Role, curveRole); ok {
			curve = append(curve, fmt.Sprintf("| %s | %s | %d%% | %s | %s | %.3f | %s | %s |", t.DUT, cell(t), pct, mpps(t.TxPPS), mpps(t.RxPPS+t.ReturnPPS), t.SearchLossPct(),
				us(l.AvgNs), us(l.P99Ns)))
		}
	}
	ways := ""
	if BothWays(r.Scenario, r.Options) {
		ways = " Traffic both ways: offered is the client's rate, Rx what the DUT forwarded both ways, loss the round trip's; " +
			"the latency is the way in, client to real, with the answers flowing."
	}
	curveNote := ""
	if ways != "" {
		curveNote = strings.TrimSpace(ways) + "\n\n"
	}
	if len(lat) > 0 {
		fmt.Fprintf(w, "\n## Frame latency at 10, 50 and 90%% of the NDR (VSPERF)\n\nEvery frame timed from the generator's XDP_TX to a sink "+
			"on a real (both read the same clock), one cell per DUT.%s\n\n| DUT | cell | of NDR | offered Mpps | loss %% | min us | avg us | p99 us | max us |\n"+
			"|---|---|---:|---:|---:|---:|---:|---:|---:|\n%s\n", ways, strings.Join(lat, "\n"))
	}
	if len(curve) > 0 {
		fmt.Fprintf(w, "\n## Loss and latency against the offered rate\n\n%s| DUT | cell | of max | offered Mpps | Rx Mpps | loss %% | avg us | p99 us |\n"+
			"|---|---|---:|---:|---:|---:|---:|---:|\n%s\n", curveNote, strings.Join(curve, "\n"))
	}
}

// curveSeries are the curve's lines, one per DUT: y of each curve trial
// against its offered rate (Mpps).
func (r *Report) curveSeries(y func(Trial) float64) []bench.Series {
	var out []bench.Series
	for _, d := range r.Options.DUTs {
		var pts plotter.XYs
		for _, t := range r.Trials {
			if _, ok := rolePercent(t.Role, curveRole); ok && t.DUT == d && t.Valid && t.Latency != nil {
				pts = append(pts, plotter.XY{X: t.TxPPS / 1e6, Y: y(t)})
			}
		}
		if len(pts) > 0 {
			out = append(out, bench.Series{Name: d, Pts: pts})
		}
	}
	return out
}
