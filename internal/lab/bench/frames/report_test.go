// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/dram"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// TestDRAMReadsPerFrame checks the pps report's count of random reads:
// 2 Mpps at 1000 flows is 500 ns a frame, 1 Mpps at 1M flows 1000 ns, so
// 500 ns more, which at 200 ns a read is 2.5 reads.
func TestDRAMReadsPerFrame(t *testing.T) {
	r := &Report{Scenario: "pps", Options: bench.Options{DUTs: []string{"xlb", "nft"}, Flows: []int{1000, 1000000}},
		FrameResults: FrameResults{DRAMRead: &dram.Result{RegionBytes: 256 << 20, Reads: 1000, ReadNs: 200}}}
	for _, tr := range []struct {
		flows int
		rx    float64
	}{{1000, 2e6}, {1000000, 1e6}} {
		r.Trials = append(r.Trials, Trial{Scenario: "pps", Role: "max", DUT: "xlb", Size: 64, Flows: tr.flows, RxPPS: tr.rx, Valid: true})
	}
	var out bytes.Buffer
	r.WriteTables(&out)
	for _, want := range []string{"over 256 MiB", "200.0 ns", "| xlb | 500.0 | 1000.0 | 500.0 | 2.50 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLineRatePPS: a 64-byte frame takes 84 bytes of a wire, IMIX its
// mean 353.8 and 20.
func TestLineRatePPS(t *testing.T) {
	if got := LineRatePPS(10, 64); math.Abs(got-14_880_952) > 1 {
		t.Errorf("10G at 64 B: %.0f, want 14880952", got)
	}
	if got := LineRatePPS(10, traffic.IMIX); math.Abs(got-10e9/((4246.0/12+20)*8)) > 1 {
		t.Errorf("10G at IMIX: %.0f", got)
	}
}

// TestFinalTrials: the long verification trials are summed up, and the
// ones that failed named with why.
func TestFinalTrials(t *testing.T) {
	r := &Report{FrameResults: FrameResults{Searches: []SearchRecord{
		{DUT: "xlb", Kind: "ndr", Size: 64, Flows: 1000, Vary: "l3-src", SearchResult: bench.SearchResult{RatePPS: 2e6},
			Final: &FinalTrial{Seconds: 5, Passed: true, Valid: true, Unpaced: true}},
		{DUT: "nft", Kind: "ndr", Size: traffic.IMIX, Flows: 1000, Vary: "l3-src", SearchResult: bench.SearchResult{RatePPS: 5e5},
			Final: &FinalTrial{Seconds: 5, LossPct: 0.25, Valid: true}},
		{DUT: "kernel", Kind: "ndr", Size: 64, Flows: 1, SearchResult: bench.SearchResult{RatePPS: 1e6}},
	}}}
	var b bytes.Buffer
	r.finalTrials(&b)
	for _, want := range []string{"Final verification trials of 5s at each rate found: 1 of 2 passed.",
		"- nft ndr IMIX B 1000 flows l3-src at 0.500 Mpps: 0.250% lost", "1 of them ran as fast as the generator goes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	(&Report{FrameResults: FrameResults{Searches: r.Searches[2:]}}).finalTrials(&b)
	if b.Len() != 0 {
		t.Errorf("no final trials, and: %s", b.String())
	}
}

// TestWorkersTable: a row per worker count of each DUT run with
// workers, the round trip's packets in and out, the one-way rate beside.
func TestWorkersTable(t *testing.T) {
	r := &Report{Scenario: "pps", Options: bench.Options{DUTs: []string{"xlb", "xlb-w1", "nft"}, Flows: []int{1000}}}
	r.Trials = []Trial{
		{Role: "both", DUT: "xlb", Flows: 1000, Sent: 1000, TxPPS: 1e6, RxPPS: 1e6, ReturnPPS: 9e5, Returned: 900, Valid: true},
		{Role: "max", DUT: "xlb-w1", Flows: 1000, RxPPS: 1.5e6, LossPct: 2, Valid: true},
	}
	var b bytes.Buffer
	r.workersTable(&b)
	for _, want := range []string{"## Worker scaling (the DPVS v1.9.2 UDP PPS table)",
		"| xlb | 0 (receiving CPU) | 1000 | 2000000 | 1900000 | 1000000 | 900000 | 10.000 | | |",
		"| xlb-w1 | 1 | 1000 | | | | | | 1500000 | 2.000 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "| nft") {
		t.Errorf("nft ran with no workers and has a row:\n%s", b.String())
	}
	b.Reset()
	(&Report{Options: bench.Options{DUTs: []string{"xlb"}, Flows: []int{1}}}).workersTable(&b)
	if b.Len() != 0 {
		t.Errorf("no DUT with workers, and: %s", b.String())
	}
}

// TestBothWaysMatrix: the matrix runs both ways unless --one-way; a
// search then counts a frame lost unless its answer came back, and a
// cell shows what the DUT forwarded both ways at the NDR (VSPERF's Rx
// fps, the sum of both ports): twice the offered rate.
func TestBothWaysMatrix(t *testing.T) {
	answered := Trial{Sent: 1000, Received: 1000, Returned: 990, LossPct: 0, Answered: true, RoundTripLossPct: 1, Valid: true}
	if got := answered.SearchLossPct(); got != 1 {
		t.Errorf("a trial both ways counts %.1f%% lost, want the round trip's 1%%", got)
	}
	if oneWay := (Trial{LossPct: 0.5, Valid: true}); oneWay.SearchLossPct() != 0.5 {
		t.Errorf("a trial one way counts %.1f%% lost, want 0.5%%", oneWay.SearchLossPct())
	}
	opts := bench.Options{DUTs: []string{"xlb"}, Sizes: []int{64}, Flows: []int{1000}, Variations: []string{"l3-src"}}
	rec := SearchRecord{DUT: "xlb", Kind: "ndr", Size: 64, Flows: 1000, Vary: "l3-src", SearchResult: bench.SearchResult{RatePPS: 1.5e6}}
	for _, tc := range []struct {
		oneWay bool
		want   []string
	}{
		{false, []string{"Both directions, as VSPERF's tests", "NDR Rx Mpps (both directions) by flow variation", "| l3-src | 3.000 |"}},
		{true, []string{"## xlb, 64-byte frames: NDR Mpps by", "| l3-src | 1.500 |"}},
	} {
		o := opts
		o.OneWay = tc.oneWay
		if got := BothWays("multiflow", o); got == tc.oneWay {
			t.Errorf("multiflow with one way %v runs both ways: %v", tc.oneWay, got)
		}
		r := &Report{Scenario: "multiflow", Options: o, FrameResults: FrameResults{Searches: []SearchRecord{rec}}}
		var b bytes.Buffer
		r.multiflowTables(&b)
		for _, want := range tc.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("one way %v: lacks %q:\n%s", tc.oneWay, want, b.String())
			}
		}
	}
	if BothWays("rfc2544", bench.Options{}) {
		t.Error("rfc2544 runs both ways")
	}
	bad := &Report{Scenario: "multiflow", Options: bench.Options{DUTs: []string{"xlb"}}, DUTs: map[string]string{"xlb": "x"},
		FrameResults: FrameResults{Trials: []Trial{{DUT: "xlb", Sent: 10, Received: 5, Lost: 5, Returned: 6, Answered: true, TxPPS: 10, RxPPS: 5, Valid: true}}}}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "6 answers back of 5") {
		t.Errorf("more answers than frames received: %v", err)
	}
}
