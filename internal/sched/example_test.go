// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"fmt"
	"strings"

	"github.com/xlb-dev/xlb/internal/sched"
)

// Three reals weighted 5:1:1. The data path steps a per-CPU cursor through
// the returned cycle, so new connections go a a b a c a a, a a b a c ...
func ExampleSmoothWRR() {
	reals := []sched.Backend{
		{ID: 0, Key: "10.0.2.1:80", Weight: 5},
		{ID: 1, Key: "10.0.2.2:80", Weight: 1},
		{ID: 2, Key: "10.0.2.3:80", Weight: 1},
	}
	cycle, err := sched.SmoothWRR(reals)
	if err != nil {
		fmt.Println(err)
		return
	}
	names := []string{"a", "b", "c"}
	picks := make([]string, len(cycle))
	for i, id := range cycle {
		picks[i] = names[id]
	}
	fmt.Println(strings.Join(picks, " "))
	fmt.Println(cycle)
	// Output:
	// a a b a c a a
	// [0 0 1 0 2 0 0]
}
