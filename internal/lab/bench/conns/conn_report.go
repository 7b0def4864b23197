// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot/plotter"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
)

// ConnResults are what the connection scenarios measured: their part of
// results.json.
type ConnResults struct {
	// ConnTrials and ConnSearches are the XDP endpoints' trials and
	// cps searches; Apps the real applications' results.
	ConnTrials   []ConnTrial      `json:"conn_trials,omitempty"`
	ConnSearches []ConnSearch     `json:"conn_searches,omitempty"`
	Apps         []apps.AppResult `json:"apps,omitempty"`
	// SynFlood are the synflood scenario's phases.
	SynFlood []SynFloodTrial `json:"synflood,omitempty"`
}

// Report is what the connection scenarios' tables, charts, CSV and
// checks read: the run's scenario, options and DUT versions, and its
// results.
type Report struct {
	Scenario string
	Options  bench.Options
	DUTs     map[string]string // name -> version
	ConnResults
}

// Check checks a connection scenario's results: every DUT ran,
// every valid trial without errors adds up, every search stays under
// its maximum.
func (r *Report) Check() error {
	ran := map[string]int{}
	for i, t := range r.ConnTrials {
		ran[t.DUT]++
		if !t.Valid {
			if t.Invalid == "" {
				return fmt.Errorf("connection trial %d: invalid without a reason", i)
			}
			continue
		}
		c := t.Client
		if t.Errors > 0 {
			// an overrun trial (a DUT on workers lets the senders
			// overrun it) meets late segments of slots an earlier
			// trial gave up, counted again: it failed, and its
			// counts need not add up
			continue
		}
		switch {
		case c.Established > c.Attempted:
			return fmt.Errorf("connection trial %d: %d established of %d attempted", i, c.Established, c.Attempted)
		case c.Closed > c.Established:
			return fmt.Errorf("connection trial %d: %d closed of %d established", i, c.Closed, c.Established)
		case c.Responses > c.Requests:
			return fmt.Errorf("connection trial %d: %d responses to %d requests", i, c.Responses, c.Requests)
		case t.Response.Count > 0 && !(t.Response.P50Us <= t.Response.P99Us && t.Response.P99Us <= t.Response.MaxUs):
			return fmt.Errorf("connection trial %d: latency percentiles out of order: %+v", i, t.Response)
		}
	}
	for _, a := range r.Apps {
		ran[a.DUT]++
	}
	for _, f := range r.SynFlood {
		ran[f.DUT]++
	}
	for _, d := range r.Options.DUTs {
		if ran[d] == 0 {
			return fmt.Errorf("DUT %s ran nothing", d)
		}
		if r.DUTs[d] == "" {
			return fmt.Errorf("DUT %s has no version", d)
		}
	}
	for _, s := range r.ConnSearches {
		if s.RatePPS > s.MaxPPS*(1+bench.PaceTolerance) {
			return fmt.Errorf("%s cps on %d cores: rate %.0f above the maximum %.0f", s.DUT, s.Cores, s.RatePPS, s.MaxPPS)
		}
	}
	return nil
}

// CSVHeader names results.csv's columns for the connection trials.
var CSVHeader = []string{"scenario", "role", "dut", "cores", "asked_cps", "duration_s", "attempted", "established",
	"closed", "requests", "responses", "errors", "busy", "offered_cps", "cps", "request_rate", "response_mbps",
	"handshake_p50_us", "handshake_p99_us", "response_p50_us", "response_p99_us", "dut_conns", "dut_mem_bytes", "valid", "invalid"}

// WriteCSV writes a row per connection trial, then the real
// applications' results as rows of their own.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	_ = cw.Write(CSVHeader)
	for _, t := range r.ConnTrials {
		c := t.Client
		_ = cw.Write([]string{t.Scenario, t.Role, t.DUT, strconv.Itoa(t.Cores), f(t.AskedCPS), f(t.Duration), u(c.Attempted),
			u(c.Established), u(c.Closed), u(c.Requests), u(c.Responses), u(t.Errors), u(c.Busy), f(t.OfferedCPS), f(t.CPS),
			f(t.RequestRate), f(t.ResponseMbps), f(t.Handshake.P50Us), f(t.Handshake.P99Us), f(t.Response.P50Us),
			f(t.Response.P99Us), u(t.DUTConns), u(t.DUTMemBytes), strconv.FormatBool(t.Valid), t.Invalid})
	}
	if len(r.SynFlood) > 0 {
		_ = cw.Write([]string{"scenario", "phase", "dut", "duration_s", "flood_asked_pps", "flood_sent", "flood_pps",
			"answered_pps", "syns_to_reals", "table_before", "table_after", "legit_cps", "legit_errors"})
		for _, t := range r.SynFlood {
			cps, errs := "", ""
			if t.Legit != nil {
				cps, errs = f(t.Legit.CPS), u(t.Legit.Errors)
			}
			_ = cw.Write([]string{r.Scenario, t.Phase, t.DUT, f(t.Duration), f(t.FloodAskedPPS), u(t.FloodSent), f(t.FloodPPS),
				f(t.AnsweredPPS), u(t.SYNsToReals), u(t.TableBefore), u(t.TableAfter), cps, errs})
		}
	}
	if len(r.Apps) > 0 {
		_ = cw.Write([]string{"scenario", "test", "dut", "rate", "unit", "mean_us", "p50_us", "p90_us", "p99_us", "max_us", "retransmits", "errors", "note"})
		for _, a := range r.Apps {
			_ = cw.Write([]string{a.Scenario, a.Test, a.DUT, f(a.Rate), a.Unit, f(a.MeanUs), f(a.P50Us), f(a.P90Us), f(a.P99Us),
				f(a.MaxUs), u(a.Retransmits), u(a.Errors), a.Note})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTables writes the reference layouts of the connection scenarios.
func (r *Report) WriteTables(w io.Writer) error {
	base := func(dut string, v func(string) (float64, bool)) string {
		mine, ok := v(dut)
		if !ok {
			return "-"
		}
		out := ""
		_, n := bench.SplitWorkers(dut)
		for _, other := range []string{"nft", "xdp-fwd", "direct"} {
			// against the baseline on as many workers
			if n > 0 && other != "direct" {
				other = bench.WorkersName(other, n)
			}
			if b, ok := v(other); ok && b > 0 && other != dut {
				out += fmt.Sprintf(" %.2fx %s", mine/b, other)
			}
		}
		return out
	}
	switch r.Scenario {
	case "synflood":
		r.writeSynFlood(w)
	case "cps":
		fmt.Fprintln(w, "## Connection rate (the DPVS CPS table): highest rate with no connection error")
		fmt.Fprintf(w, "\nEach connection: SYN, SYN-ACK, ACK + request, response, FIN, FIN-ACK, ACK (XDP endpoints), request and response of the payload column's bytes. Binary search as RFC 2544, errors = RSTs + timeouts + retransmissions + unexpected segments + slots still busy.\n\n")
		fmt.Fprintf(w, "The rate counts when %d verification trials in a row pass at it; a failure steps it down %.0f%%. "+
			"DUT columns: packets and bytes per second into and out of every balancer interface, and the connections in its table "+
			"after the last verification; client columns: its interface's packets and bits per second and the frames its link "+
			"dropped, in the same trial. Rates are the frames of the trial's connections over the trial's duration.\n\n", cpsVerifications, 100*bench.VerifyStep)
		fmt.Fprintln(w, "| DUT | cores | cps | verified | ipackets/pps | opackets/pps | ibytes/Bps | obytes/Bps | connections | "+
			"client pktRx/s | client pktTx/s | client bitsRx/s | client bitsTx/s | client drops | max offered CPS | errors at max % | ratio | payload B |")
		fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
		rate := func(cores, size int) func(string) (float64, bool) {
			return func(d string) (float64, bool) {
				for _, o := range r.ConnSearches {
					if o.DUT == d && o.Cores == cores && o.PayloadSize == size {
						return o.RatePPS, true
					}
				}
				return 0, false
			}
		}
		for _, s := range r.ConnSearches {
			l := bench.LinkRates{}
			if s.Links != nil {
				l = *s.Links
			}
			verified := fmt.Sprintf("%v", s.Verified)
			if s.Verified {
				verified = fmt.Sprintf("%dx", s.VerifiedTimes)
			}
			if s.StepsDown > 0 {
				verified += fmt.Sprintf(" (stepped down %d times)", s.StepsDown)
			}
			fmt.Fprintf(w, "| %s | %d | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %d | %.0f | %.0f | %.0f | %.0f | %d | %.0f | %.2f |%s | %d |\n",
				s.DUT, s.Cores, s.RatePPS, verified, l.DUTInPPS, l.DUTOutPPS, l.DUTInBps, l.DUTOutBps, s.Held,
				l.ClientRxPPS, l.ClientTxPPS, l.ClientRxBits, l.ClientTxBits, l.ClientDropped, s.MaxPPS, s.LossAtMaxPct,
				base(s.DUT, rate(s.Cores, s.PayloadSize)), s.PayloadSize)
		}
		r.payloadSweep(w)
		for _, s := range r.ConnSearches {
			if s.DUT != "xlb" {
				continue
			}
			if fwd, ok := rate(s.Cores, s.PayloadSize)("xdp-fwd"); ok && fwd > 0 {
				fmt.Fprintf(w, "\nxlb on %d core(s) reaches %.2fx the bare XDP forwarder's rate: %s.\n", s.Cores, s.RatePPS/fwd,
					map[bool]string{true: "at 0.9x or more, the endpoints and the lab are the limit, not xlb",
						false: "below 0.9x, xlb is the limit"}[s.RatePPS >= 0.9*fwd])
			}
		}
	case "cc", "throughput", "latency":
		title := map[string]string{"cc": "## Concurrent connections held, with keepalive requests (the DPVS CC table)",
			"throughput": fmt.Sprintf("## Keepalive requests back to back, %d connections (the DPVS throughput table)", throughputConns),
			"latency":    "## One request at a time on one connection, XDP endpoints (netperf TCP_RR)"}[r.Scenario]
		fmt.Fprintf(w, "%s\n\n", title)
		fmt.Fprintln(w, "| DUT | connections | established | requests/s | Mbps (responses) | errors | mean us | p50 us | p90 us | p99 us | max us | DUT table | DUT memory | DUT bytes per connection |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, t := range r.ConnTrials {
			l := t.Response
			per := "-"
			if t.DUTMemBytes > 0 && t.Client.Established > 0 {
				per = fmt.Sprintf("%.0f", float64(t.DUTMemBytes)/float64(t.Client.Established))
			}
			fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.1f | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %s | %s |\n", t.DUT, t.Slots,
				t.Client.Established, t.RequestRate, t.ResponseMbps, t.Errors, l.MeanUs, l.P50Us, l.P90Us, l.P99Us, l.MaxUs,
				t.DUTConns, mib(t.DUTMemBytes), per)
		}
		if r.Scenario == "cc" {
			fmt.Fprintln(w, "\nErrors and the DUT's drops are the whole run's, the opening's included; rates are the measured round's.")
			for _, t := range r.ConnTrials {
				if len(t.DUTDrops) > 0 {
					fmt.Fprintf(w, "\n%s at %d connections dropped %v.\n", t.DUT, t.Slots, t.DUTDrops)
				}
			}
			fmt.Fprintf(w, "\nThe generator (the client endpoint) takes %d bytes per connection, its slots preallocated: %s for %d.\n",
				endpoint.SlotBytes, mib(endpoint.SlotBytes*uint64(slices.Max(append([]int{0}, r.Options.Conns...)))), slices.Max(append([]int{0}, r.Options.Conns...)))
		}
		if r.Scenario == "latency" {
			fmt.Fprintln(w, "\nAdded latency, from the table above:")
			for _, t := range r.ConnTrials {
				if d, ok := r.connTrialOf("direct", t.Role); ok && t.DUT != "direct" {
					fmt.Fprintf(w, "- %s: +%.1f us p50, +%.1f us p99 over direct\n", t.DUT, t.Response.P50Us-d.Response.P50Us, t.Response.P99Us-d.Response.P99Us)
				}
			}
		}
		told := map[string]bool{}
		for _, t := range r.ConnTrials {
			if t.DUTMemHow != "" && !told[t.DUT] {
				told[t.DUT] = true
				fmt.Fprintf(w, "\n%s memory: %s.\n", t.DUT, t.DUTMemHow)
			}
		}
	}
	if len(r.Apps) > 0 {
		fmt.Fprintln(w)
		return apps.WriteAppTables(w, r.Scenario, r.Apps)
	}
	return nil
}

func mib(b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

func (r *Report) connTrialOf(dut, role string) (ConnTrial, bool) {
	for _, t := range r.ConnTrials {
		if t.DUT == dut && t.Role == role {
			return t, true
		}
	}
	return ConnTrial{}, false
}

// Charts draws CPS per DUT and core count, and the applications'
// charts (latency CDFs).
func (r *Report) Charts(dir string) ([]string, error) {
	var out []string
	if len(r.ConnSearches) > 0 {
		var ls []bench.Series
		for _, d := range r.Options.DUTs {
			var pts plotter.XYs
			for _, s := range r.ConnSearches {
				if s.DUT == d {
					if s.PayloadSize == r.Options.PayloadSize || len(r.Options.PayloadSizes) == 0 {
						pts = append(pts, plotter.XY{X: float64(s.Cores), Y: s.RatePPS / 1e3})
					}
				}
			}
			ls = append(ls, bench.Series{Name: d, Pts: pts})
		}
		f, err := bench.Chart(dir, "cps-per-dut", "Connections per second with no error", "cores", "thousand CPS", false, ls)
		if err != nil {
			return out, err
		}
		if f != "" {
			out = append(out, f)
		}
		files, err := r.payloadCharts(dir)
		out = append(out, files...)
		if err != nil {
			return out, err
		}
	}
	if len(r.Apps) > 0 {
		files, err := apps.AppCharts(dir, r.Scenario, r.Apps)
		out = append(out, files...)
		if err != nil {
			return out, err
		}
	}
	return slices.Compact(out), nil
}
