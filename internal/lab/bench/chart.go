// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one DUT's line of a chart.
type Series struct {
	Name string
	Pts  plotter.XYs
}

// Chart draws lines into name.svg and name.png in dir and returns the
// SVG's file name.
func Chart(dir, name, title, x, y string, logX bool, lines []Series) (string, error) {
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
		if len(l.Pts) > 0 {
			args = append(args, l.Name, l.Pts)
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
