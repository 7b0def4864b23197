// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// appColumn is a figure of the app tables.
type appColumn struct {
	head    string
	v       func(AppResult) float64
	format  string
	percent bool // also as % of direct
}

func appColumns(scenario string) []appColumn {
	rate := func(unit string) appColumn {
		return appColumn{unit, func(a AppResult) float64 { return a.Rate }, "%.0f", true}
	}
	lat := func(head string, v func(AppResult) float64) appColumn { return appColumn{head, v, "%.1f", true} }
	mean := lat("mean µs", func(a AppResult) float64 { return a.MeanUs })
	p50 := lat("p50 µs", func(a AppResult) float64 { return a.P50Us })
	p90 := lat("p90 µs", func(a AppResult) float64 { return a.P90Us })
	p99 := lat("p99 µs", func(a AppResult) float64 { return a.P99Us })
	maxUs := lat("max µs", func(a AppResult) float64 { return a.MaxUs })
	switch scenario {
	case "latency":
		return []appColumn{rate("trans/s"), mean, p50, p90, p99, maxUs}
	case "redis":
		return []appColumn{rate("req/s"), mean, p50, lat("p95 µs", func(a AppResult) float64 { return a.P95Us }), p99, maxUs}
	case "http":
		return []appColumn{rate("req/s"), mean, p50, p90, p99, maxUs,
			{"errors", func(a AppResult) float64 { return float64(a.Errors) }, "%.0f", false}}
	}
	return []appColumn{rate("Mbps"), {"retransmits", func(a AppResult) float64 { return float64(a.Retransmits) }, "%.0f", false},
		{"retrans/s", func(a AppResult) float64 { return a.RetransmitsPerSec }, "%.2f", false},
		{"failed streams", func(a AppResult) float64 { return float64(a.Errors) }, "%.0f", false}}
}

// appTitles head each scenario's table.
var appTitles = map[string]string{
	"latency":    "Latency: one transaction at a time (TCP_RR, TCP_CRR, sockperf ping-pong round trips)",
	"redis":      fmt.Sprintf("Redis: redis-benchmark, %d connections; redis-cli --latency", redisClients),
	"http":       fmt.Sprintf("HTTP: wrk against nginx, 1 thread, %d keep-alive connections", wrkConnections),
	"throughput": "Throughput: TCP_STREAM and iperf3, every configuration",
}

// appOrder lists the tests and the DUTs of results in order of
// appearance, direct first among the DUTs.
func appOrder(results []AppResult) (tests, duts []string) {
	for _, a := range results {
		if !slices.Contains(tests, a.Test) {
			tests = append(tests, a.Test)
		}
		if !slices.Contains(duts, a.Config()) {
			duts = append(duts, a.Config())
		}
	}
	if i := slices.Index(duts, "direct"); i > 0 {
		duts = append([]string{"direct"}, slices.Delete(duts, i, i+1)...)
	}
	return tests, duts
}

// Config names the DUT of a result with its XDP mode, if it has one:
// "xlb generic", as the Arion report names its configurations.
func (a AppResult) Config() string {
	if a.Mode != "" {
		return a.DUT + " " + a.Mode
	}
	return a.DUT
}

// findApp is the result of test through dut (a Config).
func findApp(results []AppResult, test, dut string) (AppResult, bool) {
	for _, a := range results {
		if a.Test == test && a.Config() == dut {
			return a, true
		}
	}
	return AppResult{}, false
}

// WriteAppTables writes the reference-layout Markdown tables of results
// (all DUTs of one scenario) to w, each figure also as % of direct where
// a direct result exists. Tests that could not run are listed below,
// with why.
func WriteAppTables(w io.Writer, scenario string, results []AppResult) error {
	title, ok := appTitles[scenario]
	if !ok {
		return fmt.Errorf("app scenario %q: want one of %s", scenario, strings.Join(AppScenarios, ", "))
	}
	var b strings.Builder
	if scenario == "throughput" {
		writeArionTable(&b, results)
	}
	if scenario == "redis" {
		writeArionRedisTable(&b, results)
	}
	if scenario == "latency" {
		writeArionRRTable(&b, results)
	}
	if scenario == "http" {
		writeSetupSweep(&b, results)
	}
	cols := appColumns(scenario)
	fmt.Fprintf(&b, "## %s\n\n| test | DUT |", title)
	align := "|---|---|"
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.head)
		align += "---:|"
	}
	b.WriteString("\n" + align + "\n")
	tests, duts := appOrder(results)
	var notes []string
	for _, test := range tests {
		direct, haveDirect := findApp(results, test, "direct")
		haveDirect = haveDirect && direct.Note == ""
		for _, d := range duts {
			a, ok := findApp(results, test, d)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", test, d)
			if a.Note != "" {
				b.WriteString(strings.Repeat(" n/a |", len(cols)) + "\n")
				notes = append(notes, fmt.Sprintf("- %s, %s: %s", test, d, a.Note))
				continue
			}
			for _, c := range cols {
				v := c.v(a)
				cell := fmt.Sprintf(c.format, v)
				if v == 0 && c.percent {
					cell = "-"
				} else if c.percent && haveDirect && d != "direct" && c.v(direct) > 0 {
					cell += fmt.Sprintf(" (%.0f%%)", 100*v/c.v(direct))
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			b.WriteString("\n")
		}
	}
	writeAgainstHop(&b, cols[0], tests, duts, results)
	if len(notes) > 0 {
		fmt.Fprintf(&b, "\nNot measured:\n%s\n", strings.Join(notes, "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AppCharts draws the scenario's charts into dir (SVG and PNG) and
// returns the SVG file names: for latency a CDF per test (x =
// microseconds, log scale; y = percentile; a line per DUT), for the
// others the rate of every test, a bar per DUT.
func AppCharts(dir, scenario string, results []AppResult) ([]string, error) {
	tests, duts := appOrder(results)
	if scenario != "latency" {
		unit := "rate"
		if len(results) > 0 {
			unit = results[0].Unit
		}
		name := "app-" + scenario
		if err := appBars(dir, name, appTitles[scenario], unit, tests, duts, results); err != nil {
			return nil, err
		}
		return []string{name + ".svg"}, nil
	}
	var out []string
	for _, test := range tests {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = test+": latency CDF", "µs (log scale)", "percentile"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = 0, 100
		p.Legend.Top, p.Legend.Left = false, false
		n := 0
		for i, d := range duts {
			a, ok := findApp(results, test, d)
			if !ok || len(a.CDFUs) != 101 {
				continue
			}
			var pts plotter.XYs
			for pct, us := range a.CDFUs {
				if us > 0 {
					pts = append(pts, plotter.XY{X: us, Y: float64(pct)})
				}
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return out, fmt.Errorf("CDF of %s through %s: %w", test, d, err)
			}
			l.Color, l.Dashes, l.Width = plotutil.Color(i), plotutil.Dashes(i), vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(d, l)
			n++
		}
		if n == 0 {
			continue
		}
		p.Add(plotter.NewGrid())
		name := "app-latency-cdf-" + strings.ToLower(strings.NewReplacer(" ", "-", "_", "-", ",", "").Replace(test))
		if err := savePlot(p, dir, name); err != nil {
			return out, err
		}
		out = append(out, name+".svg")
	}
	return out, nil
}

// appBars draws a group of bars per test, a bar per DUT.
func appBars(dir, name, title, unit string, tests, duts []string, results []AppResult) error {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, unit
	p.Y.Min = 0
	p.Legend.Top = true
	w := vg.Points(min(60/float64(max(len(duts), 1)), 16))
	top := 0.0
	for i, d := range duts {
		vals := make(plotter.Values, len(tests))
		for j, test := range tests {
			if a, ok := findApp(results, test, d); ok {
				vals[j] = a.Rate
				top = max(top, a.Rate)
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("bars of %s: %w", d, err)
		}
		bars.Color, bars.LineStyle.Width = plotutil.Color(i), 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(duts)-1)/2)
		p.Add(bars)
		p.Legend.Add(d, bars)
	}
	p.Y.Max = top * 1.3 // room for the legend
	p.NominalX(tests...)
	p.X.Tick.Label.Rotation, p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = 0.3, -0.9, -0.5
	return savePlot(p, dir, name)
}

// savePlot writes p to name.svg and name.png in dir.
func savePlot(p *plot.Plot, dir, name string) error {
	for _, ext := range []string{"svg", "png"} {
		if err := p.Save(18*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, name+"."+ext)); err != nil {
			return fmt.Errorf("save %s.%s: %w", name, ext, err)
		}
	}
	return nil
}

// writeArionTable writes the Arion report's TCP_STREAM table: a row per
// configuration, MTU and stream count, direct first, throughput as a
// difference from direct's at the same MTU and streams, and
// retransmissions per second; then, beyond the report's columns, the
// streams that did not complete (not counted in the rate) and the frames
// the lab's veth rings dropped (of the median trial), and every trial's
// rate when there were several.
func writeArionTable(b *strings.Builder, results []AppResult) {
	var rows []AppResult
	for _, a := range results {
		if strings.HasPrefix(a.Test, "TCP_STREAM") && a.Note == "" {
			rows = append(rows, a)
		}
	}
	if len(rows) == 0 {
		return
	}
	_, configs := appOrder(rows)
	b.WriteString("## TCP_STREAM (the Arion report's table)\n\n")
	b.WriteString("On veth the direct path (and nft's, which has no XDP program) carries 64 KB GSO segments, while any XDP " +
		"hop handles MTU-sized frames one by one (attaching XDP to a veth turns its peer's GSO off): the xdp-fwd rows, " +
		"the bare XDP forwarder, are the fair baseline for xlb; the difference from direct is given as the report gives it.\n\n")
	b.WriteString("| Config | MTU | Streams | Throughput (Mbps) | Difference (%) | Retrans/s | Failed streams | veth ring drops | trials (Mbps) |\n")
	b.WriteString("| :--- | :---: | :---: | :---: | ---: | ---: | ---: | ---: | ---: |\n")
	tests, _ := appOrder(rows)
	for _, test := range tests {
		direct, haveDirect := findApp(rows, test, "direct")
		for _, c := range configs {
			a, ok := findApp(rows, test, c)
			if !ok {
				continue
			}
			diff := "-"
			if haveDirect && direct.Rate > 0 {
				diff = fmt.Sprintf("%.1f%%", 100*a.Rate/direct.Rate)
			}
			trials := "-"
			if len(a.TrialRates) > 0 {
				var rates []string
				for _, r := range a.TrialRates {
					rates = append(rates, fmt.Sprintf("%.0f", r))
				}
				trials = strings.Join(rates, " / ")
			}
			fmt.Fprintf(b, "| %s | %d | %d | %.0f | %s | %.2f | %d | %d | %s |\n", c, a.MTU, a.Streams, a.Rate, diff, a.RetransmitsPerSec,
				a.Errors, a.RingDrops, trials)
		}
	}
	b.WriteString("\n")
}

// hopDUT is the bare XDP forwarder: what any XDP hop costs on the lab's
// links, against which a DUT's own cost shows.
const hopDUT = "xdp-fwd"

// writeAgainstHop lists, per configuration that is neither direct nor
// the hop, its rate as a share of the hop's in the same mode, test by
// test.
func writeAgainstHop(b *strings.Builder, rate appColumn, tests, duts []string, results []AppResult) {
	var lines []string
	for _, d := range duts {
		if d == "direct" || strings.HasPrefix(d, hopDUT) {
			continue
		}
		hop := hopDUT + strings.TrimPrefix(d, strings.Fields(d)[0]) // the same mode
		var cells []string
		for _, test := range tests {
			a, ok := findApp(results, test, d)
			h, hok := findApp(results, test, hop)
			if ok && hok && a.Note == "" && h.Note == "" && rate.v(h) > 0 {
				cells = append(cells, fmt.Sprintf("%s %.2fx", test, rate.v(a)/rate.v(h)))
			}
		}
		if len(cells) > 0 {
			lines = append(lines, fmt.Sprintf("- %s: %s", d, strings.Join(cells, ", ")))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\nAgainst the XDP hop alone (%s, the same links and mode), %s:\n%s\n", hopDUT, rate.head, strings.Join(lines, "\n"))
	}
}
