// SPDX-License-Identifier: Apache-2.0

package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// TestWithWorkers: --workers runs each DUT that takes workers once per
// count, the others once; a DUT that takes none is refused by name.
func TestWithWorkers(t *testing.T) {
	got := withWorkers([]string{"xlb", "sink", "nft"}, []int{0, 2}, "pps", bench.Options{})
	if want := []string{"xlb", "xlb-w2", "sink", "nft", "nft-w2"}; !slices.Equal(got, want) {
		t.Errorf("withWorkers = %v, want %v", got, want)
	}
	if _, err := NewDUT("sink-w1", "pps", bench.Options{}); err == nil || !strings.Contains(err.Error(), "sink takes no workers") {
		t.Errorf("sink-w1: %v, want it refused", err)
	}
	d, err := NewDUT("xdp-fixed-w1", "pps", bench.Options{})
	if err != nil || d.Name() != "xdp-fixed-w1" || len(d.(bench.WorkerDUT).Workers()) != 1 {
		t.Errorf("xdp-fixed-w1: %v, %v", d, err)
	}
}
