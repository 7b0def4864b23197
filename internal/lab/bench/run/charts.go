// SPDX-License-Identifier: Apache-2.0

package run

import (
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost"
)

// charts draws the scenario's charts: the frame scenarios' (see
// frames.Report.Charts), the connection scenarios' (conns.Report.Charts)
// or the datapath scenario's cost per connection-table size.
func (r *Results) charts(dir string) ([]string, error) {
	if slices.Contains(connScenarios, r.Scenario) {
		return r.connReport().Charts(dir)
	}
	if r.Cluster != nil {
		return r.Cluster.Charts(dir)
	}
	if r.Scenario != "datapath" {
		return r.frameReport().Charts(dir)
	}
	var out []string
	add := func(name, title, x, y string, logX bool, lines []bench.Series) error {
		f, err := bench.Chart(dir, name, title, x, y, logX, lines)
		if f != "" {
			out = append(out, f)
		}
		return err
	}
	var ls []bench.Series
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
		ls = append(ls, bench.Series{Name: k.name, Pts: pts})
	}
	err := add("datapath-cost", "Per-packet cost by connection-table size", "connections", "ns per packet", true, ls)
	return out, err
}
