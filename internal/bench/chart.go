// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/xlb-dev/xlb/internal/dpcost"
)

// series is one DUT's line of a chart.
type series struct {
	name string
	pts  plotter.XYs
}

// chart draws lines into name.svg and name.png in dir and returns the
// SVG's file name.
func chart(dir, name, title, x, y string, logX bool, lines []series) (string, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Y.Min = 0
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	var args []any
	for _, l := range lines {
		if len(l.pts) > 0 {
			args = append(args, l.name, l.pts)
		}
	}
	if len(args) == 0 {
		return "", nil
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return "", err
	}
	if logX && p.X.Min == p.X.Max {
		// one x value: gonum would widen the range by 1 either side,
		// to 0 for x = 1, which a log axis cannot show
		p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	}
	for _, ext := range []string{"svg", "png"} {
		if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, filepath.Join(dir, name+"."+ext)); err != nil {
			return "", fmt.Errorf("save %s.%s: %w", name, ext, err)
		}
	}
	return name + ".svg", nil
}

// charts draws the scenario's charts: forwarding rate per flow count
// (pps), per frame size (frame-sizes, rfc2544), NDR per flow count for
// each variation (multiflow).
func (r *Results) charts(dir string) ([]string, error) {
	if slices.Contains(connScenarios, r.Scenario) {
		return r.connCharts(dir)
	}
	var out []string
	add := func(name, title, x, y string, logX bool, lines []series) error {
		f, err := chart(dir, name, title, x, y, logX, lines)
		if f != "" {
			out = append(out, f)
		}
		return err
	}
	// lines has a line per DUT, a point per x whose y(dut, x) exists
	lines := func(xs []int, y func(dut string, x int) (float64, bool)) []series {
		var ls []series
		for _, d := range r.Options.DUTs {
			var pts plotter.XYs
			for _, x := range xs {
				if v, ok := y(d, x); ok {
					pts = append(pts, plotter.XY{X: float64(x), Y: v / 1e6})
				}
			}
			ls = append(ls, series{d, pts})
		}
		return ls
	}
	trialRate := func(match func(Trial) bool) (float64, bool) {
		t, ok := r.find(match)
		return t.RxPPS, ok
	}
	var err error
	switch r.Scenario {
	case "pps":
		err = add("pps-vs-flows", "UDP 64 B forwarding rate", "flows", "Mpps", true, lines(r.Options.Flows, func(d string, f int) (float64, bool) {
			return trialRate(func(t Trial) bool { return t.DUT == d && t.Flows == f })
		}))
	case "frame-sizes":
		err = add("pps-vs-frame-size", "Forwarding rate by frame size", "frame size (B)", "Mpps", false, lines(r.Options.Sizes, func(d string, s int) (float64, bool) {
			return trialRate(func(t Trial) bool { return t.DUT == d && t.Size == s && t.Role == "max" })
		}))
	case "rfc2544":
		err = add("ndr-vs-frame-size", "RFC 2544 NDR by frame size", "frame size (B)", "NDR Mpps", false, lines(r.Options.Sizes, func(d string, s int) (float64, bool) {
			n, ok := r.searchOf(d, "ndr", s, 1, "")
			return n.RatePPS, ok
		}))
	case "datapath":
		var ls []series
		for _, k := range []struct {
			name string
			ns   func(dpcost.Row) float64
		}{
			{"established client->real", func(c dpcost.Row) float64 { return c.FwdNs }},
			{"established real->client", func(c dpcost.Row) float64 { return c.RevNs }},
			{"client->real, partial checksum", func(c dpcost.Row) float64 { return c.PartialNs }},
			{"non-VIP pass", func(c dpcost.Row) float64 { return c.PassNs }},
			{"bare XDP_TX", func(dpcost.Row) float64 { return r.Cost.TxNs }},
		} {
			var pts plotter.XYs
			for _, row := range r.Cost.Rows {
				pts = append(pts, plotter.XY{X: float64(row.Conns), Y: k.ns(row)})
			}
			ls = append(ls, series{k.name, pts})
		}
		err = add("datapath-cost", "Per-packet cost by connection-table size", "connections", "ns per packet", true, ls)
	case "multiflow":
		for _, size := range r.Options.Sizes {
			for _, v := range r.Options.Variations {
				ls := lines(r.Options.Flows, func(d string, f int) (float64, bool) {
					n, ok := r.searchOf(d, "ndr", size, f, v)
					return n.RatePPS, ok
				})
				if !slices.ContainsFunc(ls, func(s series) bool { return len(s.pts) > 0 }) {
					continue
				}
				if err = add(fmt.Sprintf("ndr-vs-flows-%s-%d", v, size), fmt.Sprintf("NDR by flow count, %s, %d B", v, size),
					"flows", "NDR Mpps", true, ls); err != nil {
					return out, err
				}
			}
		}
	}
	return out, err
}
