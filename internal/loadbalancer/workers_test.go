// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"strings"
	"testing"
)

func TestWorkersCheck(t *testing.T) {
	tests := []struct {
		name    string
		workers Workers
		want    string // "" = valid
	}{
		{"none", Workers{}, ""},
		{"two", Workers{CPUs: []int{1, 0}, Queue: 4096}, ""},
		{"out of range", Workers{CPUs: []int{0, 4}}, "worker CPU 4: the machine's CPUs are 0-3"},
		{"negative", Workers{CPUs: []int{-1}}, "worker CPU -1: the machine"},
		{"twice", Workers{CPUs: []int{1, 1}}, "worker CPU 1 is given twice"},
		{"queue too long", Workers{CPUs: []int{0}, Queue: MaxWorkerQueue + 1}, "worker queue of 16385 frames"},
		{"too many", Workers{CPUs: make([]int, MaxWorkers+1)}, "65 worker CPUs: at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.workers.Check(4)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check = %v, want %q", err, tt.want)
			}
		})
	}
}
