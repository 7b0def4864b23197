// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"runtime"
	"slices"
	"testing"
)

func TestSplitWorkers(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		n          int
	}{
		{"xlb", "xlb", 0},
		{"xlb-w2", "xlb", 2},
		{"xdp-fixed-w16", "xdp-fixed", 16},
		{"xlb-synproxy", "xlb-synproxy", 0},
		{"xlb-w0", "xlb-w0", 0},
		{"xlb-wx", "xlb-wx", 0},
	} {
		if base, n := SplitWorkers(tc.name); base != tc.base || n != tc.n {
			t.Errorf("SplitWorkers(%q) = %q, %d; want %q, %d", tc.name, base, n, tc.base, tc.n)
		}
	}
	if got := WorkersName("nft", 2); got != "nft-w2" {
		t.Errorf("WorkersName = %q, want nft-w2", got)
	}
}

// TestWorkerCPUs: workers take the highest CPUs, away from the senders.
func TestWorkerCPUs(t *testing.T) {
	n := runtime.NumCPU()
	cpus, err := WorkerCPUs(1)
	if err != nil || !slices.Equal(cpus, []int{n - 1}) {
		t.Errorf("one worker: %v, %v; want CPU %d", cpus, err, n-1)
	}
	if _, err := WorkerCPUs(n + 1); err == nil {
		t.Errorf("%d workers on %d CPUs: no error", n+1, n)
	}
	if _, err := WorkerCPUs(0); err == nil {
		t.Error("0 workers: no error")
	}
}
