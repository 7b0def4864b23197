// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/sched"
)

func ExampleSmoothWRR() {
	cycle, err := sched.SmoothWRR([]sched.Backend{
		{ID: 1, Key: "10.0.2.1:80", Weight: 5},
		{ID: 2, Key: "10.0.2.2:80", Weight: 1},
		{ID: 3, Key: "10.0.2.3:80", Weight: 1},
	})
	fmt.Println(cycle, err)
	// Output: [1 1 2 1 3 1 1] <nil>
}
