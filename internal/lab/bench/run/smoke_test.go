// SPDX-License-Identifier: Apache-2.0

package run

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/cfgscale"
	"github.com/xlb-dev/xlb/internal/lab/bench/clusterbench"
	"github.com/xlb-dev/xlb/internal/lab/bench/conns"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
)

var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLB(m, &xlbBinary)) }

// TestSmokeEveryScenario runs `xlb bench all --quick`: every scenario
// over every DUT with tiny trials. It checks the index and that each
// scenario's results are complete and consistent: the JSON reads back,
// the CSV has a row per trial, the report has the scenario's tables, the
// charts exist in SVG and PNG. It times nothing.
func TestSmokeEveryScenario(t *testing.T) {
	testenv.RequireRoot(t, "builds network namespaces and runs XDP")
	testenv.RequireTool(t, "nft")
	// what each scenario's report.md and charts must have
	checks := map[string]struct {
		want   []string
		charts []string
	}{
		"pps": {[]string{"## UDP PPS", "| xlb | 1000 |", "| nft | 1 |", "| xdp-fixed | 1000 |",
			"## Worker scaling (the DPVS v1.9.2 UDP PPS table)", "| xlb-w1 | 1 | 1000 |", "| nft-w1 | 1 | 1 |", "![flame-xlb.svg](flame-xlb.svg)",
			"## UDP PPS in both directions (the DPVS report's table)", "| kernel | 1000 | "},
			[]string{"pps-vs-flows"}},
		"frame-sizes": {[]string{"## Loss at a fixed offered rate", "| 1518 | kernel |", "100G line Mpps", "| IMIX | xlb |",
			"## Loss at the limit (the DPVS v0.4 report's tables)", "| TX / sink's |"}, []string{"pps-vs-frame-size"}},
		"rfc2544": {[]string{"## RFC 2544", "| xdp-fwd | 512 |", "Final verification trials of 0.05s at each rate found: "}, []string{"ndr-vs-frame-size"}},
		"multiflow": {[]string{"## xlb, 64-byte frames", "| l3-dst | n/a | n/a |", "ports give at most 65536 flows",
			"## Frame latency at 10, 50 and 90% of the NDR (VSPERF)", "| xdp-fwd | 64 B, 1000 flows l3-src | 10% |", "## Loss and latency against the offered rate",
			"Both directions, as VSPERF's tests", "as VSPERF starts each test on a fresh switch"},
			[]string{"ndr-vs-flows-l3-src-64", "loss-vs-rate", "latency-vs-rate"}},
		"apply":    {[]string{"## Configuration at scale", "| 20 | 60 | ", "| 40 | 120 | ", "one-service change with 40 services"}, nil},
		"datapath": {[]string{"## Per-packet cost", "| 1000 | ", "| 5000 | ", "| xdp-tx |"}, []string{"datapath-cost"}},
		// the connection scenarios, XDP endpoints and real applications
		"cps": {[]string{"## Connection rate", "| xlb | 1 |", "| nft | 1 |", "| xdp-fwd | 1 |"}, []string{"cps-per-dut"}},
		"cc":  {[]string{"## Concurrent connections held", "| xlb | 2000 | 2000 |", "| nft | 2000 | 2000 |"}, nil},
		"throughput": {[]string{"## Keepalive requests back to back", "| iperf3 MTU 1500 | direct |",
			"## TCP_STREAM (the Arion report's table)", "| xlb generic | 9000 | 150 |", "| xdp-fwd native | 1500 | 1 |"}, nil},
		"latency": {[]string{"## One request at a time", "| TCP_RR, one CPU | xlb |", "| sockperf ping-pong, two CPUs | xdp-fwd |",
			"| TCP_CRR, two CPUs | xdp-fwd |", "Against the XDP hop alone",
			"## TCP_RR and TCP_CRR by configuration (the Arion report's charts)", "| xlb generic | ", "| TCP_RR, two CPUs | xdp-fwd generic |"}, nil},
		"redis": {[]string{"| redis GET | xlb |", "| redis SET -d 1400 -P 50 | direct |", "| redis GET -d 1400 -P 50 | xdp-fwd |",
			"## Redis via xlb (the Arion report's table)", "| SET | ", "`redis-cli --latency`"}, nil},
		"http": {[]string{"| wrk | haproxy |", "| wrk | xlb |", "| wrk | xdp-fwd |"}, nil},
		"cluster": {[]string{"## A cluster of xlb nodes", "| 2 | 4 |", "| 2, no sync | 4 |"},
			[]string{"cluster-throughput", "cluster-cps"}},
		"synflood": {[]string{"## SYN flood", "| xlb-synproxy | ", "| nft-synproxy | ", "### Goals",
			"Spoofed SYNs that reached a real through xlb-synproxy (goal 0): 0."}, nil},
	}
	// the tests run on any tree, committed or not: the reports say
	// which (checked below)
	base := bench.Options{Self: xlbBinary, AllowUnclean: true, LabName: fmt.Sprintf("xlbs%d", os.Getpid()),
		LabNet: uint8(220 + os.Getpid()%30)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	idx, err := RunAll(ctx, out, true, base, "xlb bench all --quick (smoke test)")
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(out, "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Entries) != len(Scenarios) || len(checks) != len(Scenarios) {
		t.Fatalf("%d scenarios ran, %d checked, want %d", len(idx.Entries), len(checks), len(Scenarios))
	}
	for _, e := range idx.Entries {
		t.Run(e.Scenario, func(t *testing.T) {
			tc, res, dir := checks[e.Scenario], e.Results, filepath.Join(out, e.Dir)
			if !strings.Contains(string(index), fmt.Sprintf("| %s | [%s/report.md](%s/report.md) |", e.Scenario, e.Dir, e.Dir)) {
				t.Errorf("index.md lacks %s:\n%s", e.Scenario, index)
			}
			var back Results
			b, err := os.ReadFile(filepath.Join(dir, "results.json"))
			if err == nil {
				err = json.Unmarshal(b, &back)
			}
			if err != nil || len(back.Trials) != len(res.Trials) || len(back.ConnTrials) != len(res.ConnTrials) ||
				len(back.Apps) != len(res.Apps) || back.Machine.Kernel == "" || len(back.DUTs) < 2 {
				t.Fatalf("results.json: %v; %d trials of %d, machine %+v, DUTs %v", err, len(back.Trials), len(res.Trials), back.Machine, back.DUTs)
			}
			f, err := os.Open(filepath.Join(dir, "results.csv"))
			if err != nil {
				t.Fatal(err)
			}
			cr := csv.NewReader(f)
			cr.FieldsPerRecord = -1 // connection results: the apps' rows have their own header
			rows, err := cr.ReadAll()
			f.Close()
			wantRows, header := len(res.Trials)+1, frames.CSVHeader
			switch {
			case res.Cost != nil:
				wantRows, header = len(res.Cost.Rows)+1, costHeader
			case res.Apply != nil:
				wantRows, header = len(res.Apply.CSVRows())+1, cfgscale.CSVHeader
			case res.Cluster != nil:
				wantRows, header = len(res.Cluster.Rows)+1, clusterbench.CSVHeader
			case len(res.SynFlood) > 0:
				wantRows, header = 1+1+len(res.SynFlood), conns.CSVHeader
			case len(res.Apps) > 0:
				wantRows, header = len(res.ConnTrials)+1+len(res.Apps)+1, conns.CSVHeader
			case res.ConnTrials != nil:
				wantRows, header = len(res.ConnTrials)+1, conns.CSVHeader
			}
			if err != nil || len(rows) != wantRows || strings.Join(rows[0], ",") != strings.Join(header, ",") {
				t.Fatalf("results.csv: %v, %d rows for %d trials", err, len(rows), len(res.Trials))
			}
			report, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(string(report), uncleanWarning); warned == back.Build.Clean() {
				t.Errorf("build %+v, and report.md warns of an unclean one: %v", back.Build, warned)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(report), w) {
					t.Errorf("report.md lacks %q:\n%s", w, report)
				}
			}
			if e.Scenario == "multiflow" {
				answersReturn(t, res)
			}
			if e.Scenario == "pps" { // --profile: SVG flame graphs and folded stacks
				for _, f := range []string{"flame-xlb.svg", "flame-xlb.folded", "flame-xdp-fixed.svg"} {
					if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
						t.Errorf("flame graph %s: %v", f, err)
					}
				}
			}
			for _, c := range tc.charts {
				for _, ext := range []string{".svg", ".png"} {
					if st, err := os.Stat(filepath.Join(dir, c+ext)); err != nil || st.Size() < 1000 {
						t.Errorf("chart %s%s: %v", c, ext, err)
					}
				}
			}
		})
	}
	if warned := strings.Contains(string(index), uncleanWarning); warned == idx.Build.Clean() {
		t.Errorf("build %+v, and index.md warns of an unclean one: %v", idx.Build, warned)
	}
	t.Logf("\n%s", index)
}

// answersReturn checks the matrix ran both ways and the answers to
// varied client addresses came back through every DUT: at the most
// flows, sources reach far past the client's own subnet, and return only
// from a block routed back to the client.
func answersReturn(t *testing.T, res *Results) {
	t.Helper()
	best := map[string]float64{} // DUT -> the best share of answers back
	for _, tr := range res.Trials {
		if tr.Vary == "l3-src" && tr.Flows == 70000 && tr.Valid && tr.Received > 0 {
			if !tr.Answered {
				t.Fatalf("%s %s trial ran one way", tr.DUT, tr.Role)
			}
			best[tr.DUT] = max(best[tr.DUT], float64(tr.Returned)/float64(tr.Received))
		}
	}
	for _, d := range res.Options.DUTs {
		if best[d] < 0.5 {
			t.Errorf("%s, l3-src at 70000 flows: at best %.0f%% of the frames received were answered back", d, 100*best[d])
		}
	}
}
