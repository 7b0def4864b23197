// SPDX-License-Identifier: Apache-2.0

package run

import (
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// TestScenarioDUTs checks which DUTs each kind of scenario takes.
func TestScenarioDUTs(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		duts     []string
		err      string // "" for none
	}{
		{"pps", []string{"xlb", "xdp-fwd", "kernel", "nft", "sink"}, ""},
		{"pps", []string{"direct"}, "DUT direct: pps takes"},
		{"rfc2544", []string{"haproxy"}, "DUT haproxy: rfc2544 takes"},
		{"cps", []string{"xlb", "nft", "haproxy", "direct"}, ""},
		{"cps", []string{"xdp-fwd"}, ""},
		{"http", []string{"xdp-fwd"}, ""},
		{"redis", []string{"xdp-fwd", "haproxy"}, ""},
		{"http", []string{"sink"}, "DUT sink: http takes"},
		{"cc", []string{"bogus"}, `DUT "bogus"`},
		{"synflood", []string{"xlb", "xlb-synproxy", "nft-synproxy"}, ""},
		{"cps", []string{"xlb-toa", "xlb-proxy-v2", "xlb-synproxy"}, ""},
		{"synflood", []string{"sink"}, "DUT sink: synflood takes"},
	} {
		o := withDefaults(bench.Options{DUTs: tc.duts}, tc.scenario)
		err := validate(o, tc.scenario)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %v: error %v, want %q", tc.scenario, tc.duts, err, tc.err)
		}
	}
	o := withDefaults(bench.Options{PayloadSize: 5000}, "cps")
	if err := validate(o, "cps"); err == nil || !strings.Contains(err.Error(), "payload size 5000") {
		t.Errorf("payload 5000: %v", err)
	}
}

// TestAddressFlows: flows that vary addresses come from the lab's routed
// blocks, so a count above them is refused; ports and MACs are not
// bound by them.
func TestAddressFlows(t *testing.T) {
	over := bench.MaxAddressFlows + 1
	for _, tc := range []struct {
		scenario   string
		variations []string
		flows      int
		err        bool
	}{
		{"pps", nil, bench.MaxAddressFlows, false},
		{"pps", nil, over, true},
		{"multiflow", []string{"l3-src"}, over, true},
		{"multiflow", []string{"l2-src", "l3-both"}, over, true},
		{"multiflow", []string{"l2-src"}, over, false},
	} {
		o := withDefaults(bench.Options{Variations: tc.variations, Flows: []int{tc.flows}}, tc.scenario)
		err := validate(o, tc.scenario)
		if tc.err != (err != nil) || err != nil && !strings.Contains(err.Error(), "routed blocks") {
			t.Errorf("%s %v %d flows: error %v, want one: %v", tc.scenario, tc.variations, tc.flows, err, tc.err)
		}
	}
}
