// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/xlb-dev/xlb/internal/dpcost"
)

// Results are everything a run measured and how: they go to
// results.json whole, to results.csv a trial per row, and into
// report.md and the charts.
type Results struct {
	Scenario string            `json:"scenario"`
	Command  string            `json:"command"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Machine  Machine           `json:"machine"`
	Revision string            `json:"xlb_revision"`
	DUTs     map[string]string `json:"duts"` // name -> version
	Options  Options           `json:"options"`
	Trials   []Trial           `json:"trials"`
	Searches []SearchRecord    `json:"searches,omitempty"`
	Skipped  []Skip            `json:"skipped,omitempty"`
	// ConnTrials and ConnSearches are the XDP endpoints' trials and
	// cps searches; Apps the real applications' results.
	ConnTrials   []ConnTrial  `json:"conn_trials,omitempty"`
	ConnSearches []ConnSearch `json:"conn_searches,omitempty"`
	Apps         []AppResult  `json:"apps,omitempty"`
	// Cost is the datapath scenario's per-packet cost table.
	Cost *dpcost.Table `json:"datapath_cost,omitempty"`
}

// SearchRecord is one NDR or PDR search's result.
type SearchRecord struct {
	DUT          string  `json:"dut"`
	Kind         string  `json:"kind"` // ndr or pdr
	Size         int     `json:"frame_size"`
	Flows        int     `json:"flows"`
	Vary         string  `json:"vary,omitempty"`
	TolerancePct float64 `json:"loss_tolerance_pct"`
	SearchResult
}

// Skip is a multi-flow cell that was not measured, and why.
type Skip struct {
	DUT   string `json:"dut"`
	Size  int    `json:"frame_size"`
	Vary  string `json:"vary"`
	Flows int    `json:"flows"`
	Why   string `json:"why"`
}

func newResults(scenario string, o Options) *Results {
	return &Results{Scenario: scenario, Started: time.Now(), Machine: ThisMachine(), Revision: xlbVersion(o.Self),
		DUTs: map[string]string{}, Options: o}
}

// Write stores the results in dir: results.json, results.csv, report.md
// and the charts (SVG and PNG).
func (r *Results) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "results.csv"), r.writeCSV); err != nil {
		return err
	}
	charts, err := r.charts(dir)
	if err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	return writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { return r.writeReport(w, charts) })
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// csvHeader names results.csv's columns.
var csvHeader = []string{"scenario", "role", "dut", "frame_size", "l4", "ipv6", "flows", "vary", "asked_pps", "duration_s",
	"sent", "received", "lost", "loss_pct", "tx_pps", "rx_pps", "rx_mbps", "valid", "invalid"}

// costHeader names results.csv's columns for the datapath scenario.
var costHeader = []string{"conns", "xdp_tx_ns", "pass_ns", "new_ns", "established_fwd_ns", "established_first_ns", "established_rev_ns", "established_partial_csum_ns", "ct4_bytes"}

func (r *Results) writeCSV(w io.Writer) error {
	if slices.Contains(connScenarios, r.Scenario) {
		return r.writeConnCSV(w)
	}
	cw := csv.NewWriter(w)
	if r.Cost != nil {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
		_ = cw.Write(costHeader)
		for _, row := range r.Cost.Rows {
			_ = cw.Write([]string{strconv.Itoa(row.Conns), f(r.Cost.TxNs), f(row.PassNs), f(row.NewNs), f(row.FwdNs),
				f(row.FwdHoldNs), f(row.RevNs), f(row.PartialNs), strconv.FormatUint(row.Ct4Bytes, 10)})
		}
		cw.Flush()
		return cw.Error()
	}
	_ = cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, t := range r.Trials {
		_ = cw.Write([]string{t.Scenario, t.Role, t.DUT, strconv.Itoa(t.Size), string(t.L4), strconv.FormatBool(t.IPv6),
			strconv.Itoa(t.Flows), t.Vary, f(t.AskedPPS), f(t.Duration), strconv.FormatUint(t.Sent, 10),
			strconv.FormatUint(t.Received, 10), strconv.FormatUint(t.Lost, 10), f(t.LossPct), f(t.TxPPS), f(t.RxPPS),
			f(t.RxMbps), strconv.FormatBool(t.Valid), t.Invalid})
	}
	cw.Flush()
	return cw.Error()
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		fmt.Fprintf(w, "%s\n", b)
	}
}

// Check verifies that results are complete and consistent: every trial's
// counts add up, every search has its trials, every DUT ran. The CI smoke
// run checks its results with it.
func (r *Results) Check() error {
	if r.Scenario == "datapath" {
		return r.checkCost()
	}
	if slices.Contains(connScenarios, r.Scenario) {
		return r.checkConn()
	}
	if len(r.Trials) == 0 {
		return fmt.Errorf("no trials")
	}
	ran := map[string]int{}
	for i, t := range r.Trials {
		ran[t.DUT]++
		if !t.Valid {
			if t.Invalid == "" {
				return fmt.Errorf("trial %d: invalid without a reason", i)
			}
			continue
		}
		switch {
		case t.Received+t.Lost != t.Sent:
			return fmt.Errorf("trial %d: received %d + lost %d != sent %d", i, t.Received, t.Lost, t.Sent)
		case t.Sent == 0 || t.TxPPS <= 0:
			return fmt.Errorf("trial %d: valid with nothing sent", i)
		case t.RxPPS > t.TxPPS:
			return fmt.Errorf("trial %d: rx %.0f pps above tx %.0f pps", i, t.RxPPS, t.TxPPS)
		}
	}
	for _, d := range r.Options.DUTs {
		if ran[d] == 0 && !r.allSkipped(d) {
			return fmt.Errorf("DUT %s ran no trial", d)
		}
		if r.DUTs[d] == "" {
			return fmt.Errorf("DUT %s has no version", d)
		}
	}
	for _, s := range r.Searches {
		if s.RatePPS > s.MaxPPS*(1+PaceTolerance) {
			return fmt.Errorf("%s %s %d B: rate %.0f above the maximum %.0f", s.DUT, s.Kind, s.Size, s.RatePPS, s.MaxPPS)
		}
	}
	return nil
}

// checkCost verifies the datapath scenario's table: a row per size
// asked, every figure measured.
func (r *Results) checkCost() error {
	c := r.Cost
	switch {
	case c == nil:
		return fmt.Errorf("no cost table")
	case c.TxNs <= 0:
		return fmt.Errorf("no XDP_TX baseline")
	case len(c.Rows) != len(r.Options.Flows):
		return fmt.Errorf("%d rows for %d table sizes", len(c.Rows), len(r.Options.Flows))
	}
	for _, row := range c.Rows {
		if row.PassNs <= 0 || row.NewNs <= 0 || row.FwdNs <= 0 || row.RevNs <= 0 || row.PartialNs <= 0 || row.Ct4Bytes == 0 {
			return fmt.Errorf("%d connections: a figure is missing: %+v", row.Conns, row)
		}
	}
	return nil
}

func (r *Results) allSkipped(dut string) bool {
	for _, s := range r.Skipped {
		if s.DUT == dut {
			return true
		}
	}
	return false
}
