// SPDX-License-Identifier: Apache-2.0

package run

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

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/cfgscale"
	"github.com/xlb-dev/xlb/internal/lab/bench/clusterbench"
	"github.com/xlb-dev/xlb/internal/lab/bench/conns"
	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
)

// Results are everything a run measured and how: they go to
// results.json whole, to results.csv a trial per row, and into
// report.md and the charts.
type Results struct {
	Scenario string        `json:"scenario"`
	Command  string        `json:"command"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Machine  bench.Machine `json:"machine"`
	Revision string        `json:"xlb_revision"`
	// Build is the exact commit the xlb binary was built at and whether
	// the tree had changes not committed (xlb_build.modified).
	Build   bench.Build       `json:"xlb_build"`
	DUTs    map[string]string `json:"duts"` // name -> version
	Options bench.Options     `json:"options"`
	// Notes say what the run changed of what it was asked, and why (a
	// size the machine's memory cannot hold).
	Notes []string `json:"notes,omitempty"`
	// FrameResults are the frame scenarios' trials, searches and
	// skipped cells (trials, searches, skipped in the JSON).
	frames.FrameResults
	// ConnResults are the connection scenarios' trials, searches and
	// the real applications' results (conn_trials, conn_searches, apps).
	conns.ConnResults
	// Cost is the datapath scenario's per-packet cost table.
	Cost *dpcost.Table `json:"datapath_cost,omitempty"`
	// Apply is the apply scenario's table.
	Apply *cfgscale.Table `json:"apply,omitempty"`
	// Cluster is the cluster scenario's table.
	Cluster *clusterbench.Table `json:"cluster,omitempty"`
}

func newResults(scenario string, o bench.Options, build bench.Build) *Results {
	return &Results{Scenario: scenario, Started: time.Now(), Machine: bench.ThisMachine(), Revision: bench.XLBVersion(o.Self),
		Build: build, DUTs: map[string]string{}, Options: o}
}

// uncleanWarning is the line every report of a build that names no
// commit exactly starts with.
const uncleanWarning = "**NOT A CLEAN BUILD**"

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
	for _, p := range r.Profiles {
		name, err := p.WriteFiles(dir)
		if err != nil {
			return fmt.Errorf("flame graph of %s: %w", p.DUT, err)
		}
		charts = append(charts, name)
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

// costHeader names results.csv's columns for the datapath scenario.
var costHeader = []string{"conns", "xdp_tx_ns", "pass_ns", "new_ns", "established_fwd_ns", "established_first_ns", "established_rev_ns", "established_partial_csum_ns", "drop_ns", "drop_recorded_ns", "ct4_bytes"}

func (r *Results) writeCSV(w io.Writer) error {
	if slices.Contains(connScenarios, r.Scenario) {
		return r.connReport().WriteCSV(w)
	}
	cw := csv.NewWriter(w)
	if r.Apply != nil {
		_ = cw.Write(cfgscale.CSVHeader)
		_ = cw.WriteAll(r.Apply.CSVRows())
		return cw.Error()
	}
	if r.Cluster != nil {
		_ = cw.Write(clusterbench.CSVHeader)
		_ = cw.WriteAll(r.Cluster.CSVRows())
		return cw.Error()
	}
	if r.Cost != nil {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
		_ = cw.Write(costHeader)
		for _, row := range r.Cost.Rows {
			_ = cw.Write([]string{strconv.Itoa(row.Conns), f(r.Cost.TxNs), f(row.PassNs), f(row.NewNs), f(row.FwdNs),
				f(row.FwdHoldNs), f(row.RevNs), f(row.PartialNs), f(row.DropNs), f(row.DropRecordedNs), strconv.FormatUint(row.Ct4Bytes, 10)})
		}
		cw.Flush()
		return cw.Error()
	}
	return r.frameReport().WriteCSV(w)
}

// Check verifies that results are complete and consistent: every trial's
// counts add up, every search has its trials, every DUT ran. The CI smoke
// run checks its results with it.
func (r *Results) Check() error {
	switch r.Scenario {
	case "datapath":
		return r.checkCost()
	case "apply":
		if r.Apply == nil {
			return fmt.Errorf("no apply table")
		}
		return r.Apply.Check(r.Options.Services, true)
	case "cluster":
		if r.Cluster == nil {
			return fmt.Errorf("no cluster table")
		}
		return r.Cluster.Check(r.Options.Nodes)
	}
	if slices.Contains(connScenarios, r.Scenario) {
		return r.connReport().Check()
	}
	return r.frameReport().Check()
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
		if row.PassNs <= 0 || row.NewNs <= 0 || row.FwdNs <= 0 || row.RevNs <= 0 || row.PartialNs <= 0 ||
			row.DropNs <= 0 || row.DropRecordedNs <= 0 || row.Ct4Bytes == 0 {
			return fmt.Errorf("%d connections: a figure is missing: %+v", row.Conns, row)
		}
	}
	return nil
}

// frameReport is what the frame scenarios' tables, charts and checks read.
func (r *Results) frameReport() *frames.Report {
	return &frames.Report{Scenario: r.Scenario, Options: r.Options, DUTs: r.DUTs, FrameResults: r.FrameResults}
}

// connReport is what the connection scenarios' tables, charts and
// checks read.
func (r *Results) connReport() *conns.Report {
	return &conns.Report{Scenario: r.Scenario, Options: r.Options, DUTs: r.DUTs, ConnResults: r.ConnResults}
}
