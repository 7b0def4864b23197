// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// Charts draws the scenario's charts: forwarding rate per flow count
// (pps), per frame size (frame-sizes, rfc2544), NDR per flow count for
// each variation (multiflow).
func (r *Report) Charts(dir string) ([]string, error) {
	var out []string
	add := func(name, title, x, y string, logX bool, lines []bench.Series) error {
		f, err := bench.Chart(dir, name, title, x, y, logX, lines)
		if f != "" {
			out = append(out, f)
		}
		return err
	}
	// lines has a line per DUT, a point per x whose y(dut, x) exists
	// (frame sizes at their mean bytes: IMIX at 353.8)
	lines := func(xs []int, xOf func(int) float64, y func(dut string, x int) (float64, bool)) []bench.Series {
		var ls []bench.Series
		for _, d := range r.Options.DUTs {
			var pts plotter.XYs
			for _, x := range xs {
				if v, ok := y(d, x); ok {
					pts = append(pts, plotter.XY{X: xOf(x), Y: v / 1e6})
				}
			}
			ls = append(ls, bench.Series{Name: d, Pts: pts})
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
		err = add("pps-vs-flows", "UDP 64 B forwarding rate", "flows", "Mpps", true, lines(r.Options.Flows, flowsX, func(d string, f int) (float64, bool) {
			return trialRate(func(t Trial) bool { return t.DUT == d && t.Flows == f && t.Role == "max" })
		}))
	case "frame-sizes":
		err = add("pps-vs-frame-size", "Forwarding rate by frame size", "frame size (B)", "Mpps", false, lines(r.Options.Sizes, traffic.MeanSize, func(d string, s int) (float64, bool) {
			return trialRate(func(t Trial) bool { return t.DUT == d && t.Size == s && t.Role == "max" })
		}))
	case "rfc2544":
		err = add("ndr-vs-frame-size", "RFC 2544 NDR by frame size", "frame size (B)", "NDR Mpps", false, lines(r.Options.Sizes, traffic.MeanSize, func(d string, s int) (float64, bool) {
			n, ok := r.searchOf(d, "ndr", s, 1, "")
			return n.RatePPS, ok
		}))
	case "multiflow":
		for _, size := range r.Options.Sizes {
			for _, v := range r.Options.Variations {
				ls := lines(r.Options.Flows, flowsX, func(d string, f int) (float64, bool) {
					n, ok := r.searchOf(d, "ndr", size, f, v)
					return r.ndrRx(n), ok
				})
				if !slices.ContainsFunc(ls, func(s bench.Series) bool { return len(s.Pts) > 0 }) {
					continue
				}
				if err = add(fmt.Sprintf("ndr-vs-flows-%s-%s", v, strings.ToLower(traffic.SizeName(size))), fmt.Sprintf("NDR by flow count, %s, %s B", v, traffic.SizeName(size)),
					"flows", r.ndrUnit(), true, ls); err != nil {
					return out, err
				}
			}
		}
		if ls := r.curveSeries(func(t Trial) float64 { return t.SearchLossPct() }); len(ls) > 0 {
			if err = add("loss-vs-rate", "Loss against the offered rate", "offered Mpps", "loss %", false, ls); err != nil {
				return out, err
			}
			err = add("latency-vs-rate", "Frame latency p99 against the offered rate", "offered Mpps", "p99 us", false,
				r.curveSeries(func(t Trial) float64 { return t.Latency.P99Ns / 1e3 }))
		}
	}
	return out, err
}

// flowsX places a flow count on a chart's x axis.
func flowsX(flows int) float64 { return float64(flows) }
