// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"encoding/xml"
	"maps"
	"strings"
	"testing"
)

// perfScript is `perf script -F comm,cpu,ip,sym` output: two samples of
// the generator's thread in an XDP program, one of the idle task.
const perfScript = `xlb [000] 
	ffffffffc0a1b2c3 bpf_prog_6deef7357e7b4530_xdp_gen
	ffffffff81abcdef bpf_test_run_xdp_live
	ffffffff81000130 entry_SYSCALL_64_after_hwframe

xlb [000] 
	ffffffffc0a1b2c3 bpf_prog_6deef7357e7b4530_xdp_gen+0x10
	ffffffff81abcdef bpf_test_run_xdp_live
	ffffffff81000130 entry_SYSCALL_64_after_hwframe

swapper [001] 
	ffffffff8211aa00 default_idle
	           1f00a [unknown]

`

func TestFold(t *testing.T) {
	got, n, err := Fold(strings.NewReader(perfScript))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"CPU 0;xlb;entry_SYSCALL_64_after_hwframe;bpf_test_run_xdp_live;bpf_prog_6deef7357e7b4530_xdp_gen": 2,
		"CPU 1;swapper;[unknown];default_idle": 1,
	}
	if n != 3 || !maps.Equal(got, want) {
		t.Errorf("Fold: %d samples %v, want 3 %v", n, got, want)
	}
}

func TestFlameGraph(t *testing.T) {
	stacks, _, err := Fold(strings.NewReader(perfScript))
	if err != nil {
		t.Fatal(err)
	}
	svg := FlameGraph("xlb: a <trial>", stacks)
	// well-formed XML, the title escaped, a frame per call with its
	// samples, the root holding all
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not XML: %v\n%s", err, svg)
	}
	for _, want := range []string{"xlb: a &lt;trial&gt;", "<title>all (3 samples, 100.00%)</title>",
		"<title>bpf_prog_6deef7357e7b4530_xdp_gen (2 samples, 66.67%)</title>", "<title>default_idle (1 samples, 33.33%)</title>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("flame graph lacks %q", want)
		}
	}
	if empty := FlameGraph("none", nil); strings.Contains(empty, "<rect x=\"10.0\"") {
		t.Errorf("an empty profile drew frames:\n%s", empty)
	}
}
