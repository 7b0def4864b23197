// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// TestPayloadSweep: the WARP17 table has a row per DUT and payload size
// at the first core count, with the client's rates; no sweep, no table.
func TestPayloadSweep(t *testing.T) {
	links := &bench.LinkRates{ClientTxPPS: 700_000, ClientRxPPS: 500_000, ClientTxBits: 300e6, ClientRxBits: 200e6, DUTInPPS: 1.2e6, DUTOutPPS: 1.2e6}
	r := &Report{Scenario: "cps", Options: bench.Options{DUTs: []string{"xlb", "nft"}, Cores: []int{1}, PayloadSizes: []int{1, 1024}}}
	r.ConnSearches = []ConnSearch{
		{DUT: "xlb", Cores: 1, PayloadSize: 1, SearchResult: bench.SearchResult{RatePPS: 100_000}, Links: links},
		{DUT: "xlb", Cores: 1, PayloadSize: 1024, SearchResult: bench.SearchResult{RatePPS: 80_000}, Links: links},
		{DUT: "nft", Cores: 1, PayloadSize: 1, SearchResult: bench.SearchResult{RatePPS: 50_000}},
	}
	var b strings.Builder
	r.payloadSweep(&b)
	for _, want := range []string{"(the WARP17 TCP raw charts)",
		"| xlb | 1 | 100000 | 700000 | 500000 | 300.0 | 200.0 | 1200000 | 1200000 |",
		"| xlb | 1024 | 80000 |", "| nft | 1 | 50000 | 0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if i, j := strings.Index(b.String(), "| xlb | 1024"), strings.Index(b.String(), "| nft"); i > j {
		t.Errorf("rows not by DUT:\n%s", b.String())
	}
	b.Reset()
	r.Options.PayloadSizes = nil
	r.payloadSweep(&b)
	if b.Len() != 0 {
		t.Errorf("no sweep, and a table:\n%s", b.String())
	}
}
