// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/dram"
	"github.com/xlb-dev/xlb/internal/lab/bench/profile"
)

// FrameResults are what the frame scenarios measured: their part of
// results.json.
type FrameResults struct {
	Trials   []Trial        `json:"trials"`
	Searches []SearchRecord `json:"searches,omitempty"`
	Skipped  []Skip         `json:"skipped,omitempty"`
	// DRAMRead is one random read's latency over a region the size of
	// xlb's IPv4 connection table, measured in the same run (pps), the
	// unit the per-frame cost of many flows is counted in
	DRAMRead *dram.Result `json:"dram_read,omitempty"`
	// Profiles are perf recordings of one unpaced trial per DUT
	// (--profile), drawn as flame graphs next to the report
	Profiles []profile.Profile `json:"profiles,omitempty"`
	// Forgotten counts the times a DUT forgot its flows before a new
	// cell of the matrix (bench.Forgetter)
	Forgotten int `json:"forgotten,omitempty"`
}

// Report is what the frame scenarios' tables, charts, CSV and checks
// read: the run's scenario, options and DUT versions, and its results.
type Report struct {
	Scenario string
	Options  bench.Options
	DUTs     map[string]string // name -> version
	FrameResults
}

// SearchRecord is one NDR or PDR search's result.
type SearchRecord struct {
	DUT          string  `json:"dut"`
	Kind         string  `json:"kind"` // ndr or pdr
	Size         int     `json:"frame_size"`
	Flows        int     `json:"flows"`
	Vary         string  `json:"vary,omitempty"`
	TolerancePct float64 `json:"loss_tolerance_pct"`
	bench.SearchResult
	// Tries are every search's rate when the cell was searched more than
	// once (--best-of); the best counts
	Tries []float64 `json:"tries,omitempty"`
	// Final is the long verification trial at the rate found
	// (--verify-duration), VSPERF's: whether it passed, and its loss
	Final *FinalTrial `json:"final,omitempty"`
}

// FinalTrial is a search's long verification trial.
type FinalTrial struct {
	Seconds float64 `json:"duration_s"`
	// Unpaced says it ran as fast as the generator goes, as the search's
	// rate was found (at the maximum); OfferedPPS is what it offered
	Unpaced    bool    `json:"unpaced,omitempty"`
	OfferedPPS float64 `json:"offered_pps"`
	Passed     bool    `json:"passed"`
	LossPct    float64 `json:"loss_pct"`
	Valid      bool    `json:"valid"`
}

// Skip is a multi-flow cell that was not measured, and why.
type Skip struct {
	DUT   string `json:"dut"`
	Size  int    `json:"frame_size"`
	Vary  string `json:"vary"`
	Flows int    `json:"flows"`
	Why   string `json:"why"`
}

// CSVHeader names results.csv's columns.
var CSVHeader = []string{"scenario", "role", "dut", "frame_size", "l4", "ipv6", "flows", "vary", "asked_pps", "duration_s",
	"sent", "received", "lost", "loss_pct", "tx_pps", "rx_pps", "rx_mbps", "valid", "invalid"}

// WriteCSV writes results.csv of a frame scenario: a row per trial.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
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

// Check verifies that a frame scenario's results are complete and
// consistent: every trial's counts add up, every search has its trials,
// every DUT ran.
func (r *Report) Check() error {
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
		case t.Answered && t.Returned > t.Received:
			return fmt.Errorf("trial %d: %d answers back of %d frames received", i, t.Returned, t.Received)
		case t.Latency != nil && t.Latency.Frames != t.Received:
			return fmt.Errorf("trial %d: %d frames timed of %d received", i, t.Latency.Frames, t.Received)
		case t.Latency != nil && !(t.Latency.MinNs <= t.Latency.P50Ns && t.Latency.P50Ns <= t.Latency.P99Ns && t.Latency.P99Ns <= t.Latency.MaxNs):
			return fmt.Errorf("trial %d: latency %+v out of order", i, *t.Latency)
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
		if s.RatePPS > s.MaxPPS*(1+bench.PaceTolerance) {
			return fmt.Errorf("%s %s %d B: rate %.0f above the maximum %.0f", s.DUT, s.Kind, s.Size, s.RatePPS, s.MaxPPS)
		}
	}
	return nil
}

func (r *Report) allSkipped(dut string) bool {
	for _, s := range r.Skipped {
		if s.DUT == dut {
			return true
		}
	}
	return false
}
