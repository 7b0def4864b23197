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
	var out []string
	add := func(name, title, x, y string, logX bool, lines []series) error {
		f, err := chart(dir, name, title, x, y, logX, lines)
		if f != "" {
			out = append(out, f)
		}
		return err
	}
	perDUT := func(point func(dut string) plotter.XYs) []series {
		var ls []series
		for _, d := range r.Options.DUTs {
			ls = append(ls, series{d, point(d)})
		}
		return ls
	}
	var err error
	switch r.Scenario {
	case "pps":
		err = add("pps-vs-flows", "UDP 64 B forwarding rate", "flows", "Mpps", true, perDUT(func(d string) plotter.XYs {
			var pts plotter.XYs
			for _, f := range r.Options.Flows {
				if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Flows == f }); ok {
					pts = append(pts, plotter.XY{X: float64(f), Y: t.RxPPS / 1e6})
				}
			}
			return pts
		}))
	case "frame-sizes":
		err = add("pps-vs-frame-size", "Forwarding rate by frame size", "frame size (B)", "Mpps", false, perDUT(func(d string) plotter.XYs {
			var pts plotter.XYs
			for _, s := range r.Options.Sizes {
				if t, ok := r.find(func(t Trial) bool { return t.DUT == d && t.Size == s && t.Role == "max" }); ok {
					pts = append(pts, plotter.XY{X: float64(s), Y: t.RxPPS / 1e6})
				}
			}
			return pts
		}))
	case "rfc2544":
		err = add("ndr-vs-frame-size", "RFC 2544 NDR by frame size", "frame size (B)", "NDR Mpps", false, perDUT(func(d string) plotter.XYs {
			var pts plotter.XYs
			for _, s := range r.Options.Sizes {
				if n, ok := r.searchOf(d, "ndr", s, 1, ""); ok {
					pts = append(pts, plotter.XY{X: float64(s), Y: n.RatePPS / 1e6})
				}
			}
			return pts
		}))
	case "multiflow":
		for _, size := range r.Options.Sizes {
			for _, v := range r.Options.Variations {
				lines := perDUT(func(d string) plotter.XYs {
					var pts plotter.XYs
					for _, f := range r.Options.Flows {
						if n, ok := r.searchOf(d, "ndr", size, f, v); ok {
							pts = append(pts, plotter.XY{X: float64(f), Y: n.RatePPS / 1e6})
						}
					}
					return pts
				})
				if !slices.ContainsFunc(lines, func(s series) bool { return len(s.pts) > 0 }) {
					continue
				}
				if err = add(fmt.Sprintf("ndr-vs-flows-%s-%d", v, size), fmt.Sprintf("NDR by flow count, %s, %d B", v, size),
					"flows", "NDR Mpps", true, lines); err != nil {
					break
				}
			}
		}
	}
	return out, err
}
