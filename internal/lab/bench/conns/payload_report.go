// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"fmt"
	"io"

	"gonum.org/v1/plot/plotter"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// payloadSweep is WARP17's TCP raw charts as a table: for each DUT and
// payload size, the setup rate (connections a second, each one request
// and one response of the size) and the client's packets and bits a
// second in the same trials.
func (r *Report) payloadSweep(w io.Writer) {
	if len(r.Options.PayloadSizes) == 0 {
		return
	}
	fmt.Fprintln(w, "\n## Setup rate and packets against the payload size (the WARP17 TCP raw charts)\n\n"+
		"Each row a cps search at one request and one response of the payload's bytes; the client's packets and bits a second "+
		"from the trials at the rate found. WARP17 counts clients' and servers' sessions both: here, connections through the DUT.\n\n"+
		"| DUT | payload B | sessions/s | client pktTx/s | client pktRx/s | client Mbps Tx | client Mbps Rx | DUT ipackets/pps | DUT opackets/pps |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, d := range r.Options.DUTs {
		for _, s := range r.ConnSearches {
			if s.DUT != d || s.Cores != r.Options.Cores[0] {
				continue
			}
			l := bench.LinkRates{}
			if s.Links != nil {
				l = *s.Links
			}
			fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %.0f |\n", d, s.PayloadSize, s.RatePPS,
				l.ClientTxPPS, l.ClientRxPPS, l.ClientTxBits/1e6, l.ClientRxBits/1e6, l.DUTInPPS, l.DUTOutPPS)
		}
	}
}

// payloadCharts draws the sweep as WARP17 does: setup rate and packets
// a second against the payload size, a line per DUT.
func (r *Report) payloadCharts(dir string) ([]string, error) {
	if len(r.Options.PayloadSizes) == 0 {
		return nil, nil
	}
	var setup, pps []bench.Series
	for _, d := range r.Options.DUTs {
		var sp, pp plotter.XYs
		for _, s := range r.ConnSearches {
			if s.DUT != d || s.Cores != r.Options.Cores[0] {
				continue
			}
			sp = append(sp, plotter.XY{X: float64(s.PayloadSize), Y: s.RatePPS / 1e3})
			if s.Links != nil {
				pp = append(pp, plotter.XY{X: float64(s.PayloadSize), Y: (s.Links.ClientTxPPS + s.Links.ClientRxPPS) / 1e6})
			}
		}
		setup = append(setup, bench.Series{Name: d, Pts: sp})
		pps = append(pps, bench.Series{Name: d, Pts: pp})
	}
	var out []string
	for _, c := range []struct {
		name, title, y string
		ls             []bench.Series
	}{
		{"setup-vs-payload", "TCP setup rate against the payload size", "thousand sessions/s", setup},
		{"pps-vs-payload", "Client packets (Tx + Rx) against the payload size", "Mpps", pps},
	} {
		f, err := bench.Chart(dir, c.name, c.title, "payload bytes", c.y, false, c.ls)
		if err != nil {
			return out, err
		}
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}
