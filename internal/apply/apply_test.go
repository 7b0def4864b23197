// SPDX-License-Identifier: Apache-2.0

package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/apply/applytest"
	"github.com/xlb-dev/xlb/internal/config"
)

const (
	before = `interfaces: [eth0]
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, local_ips: [198.51.100.254],
     reals: [{address: 198.51.100.1, port: 80}, {address: 198.51.100.2, port: 80}]}
  - {vip: 192.0.2.10, port: 53, protocol: udp, local_ips: [198.51.100.254],
     reals: [{address: 198.51.100.1, port: 53}]}
`
	after = `interfaces: [eth0]
timeouts: {tcp: 600}
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, scheduler: wrr, local_ips: [198.51.100.254],
     reals: [{address: 198.51.100.1, port: 80, weight: 3}, {address: 198.51.100.3, port: 80}]}
  - {vip: 2001:db8::10, port: 443, protocol: tcp, local_ips: ["2001:db8:1::fe"],
     reals: [{address: "2001:db8:1::1", port: 443}]}
`
)

// TestTransitionRollsBack fails each step of a transition in turn: the
// data path must end as it was before, and the error must say both what
// failed and that nothing changed.
func TestTransitionRollsBack(t *testing.T) {
	from, to := applytest.Desired(t, before), applytest.Desired(t, after)
	newDP := func() *applytest.DataPath {
		dp := &applytest.DataPath{}
		if _, err := apply.Transition(dp, &config.Desired{Settings: dp.Settings()}, from); err != nil {
			t.Fatal(err)
		}
		dp.Calls = 0
		return dp
	}
	dp := newDP()
	changes, err := apply.Transition(dp, from, to)
	if err != nil {
		t.Fatal(err)
	}
	steps := dp.Calls
	if steps < 5 {
		t.Fatalf("transition took %d steps (%s); want settings, remove, add, update and reals", steps, changes)
	}
	assertHolds(t, dp, to, "after the transition")

	for failAt := 1; failAt <= steps; failAt++ {
		t.Run(fmt.Sprintf("step %d fails", failAt), func(t *testing.T) {
			dp := newDP()
			dp.FailAt = failAt
			_, err := apply.Transition(dp, from, to)
			if !errors.Is(err, applytest.ErrInjected) || !strings.Contains(err.Error(), "rolled back, nothing changed") {
				t.Fatalf("got %v, want the injected failure, rolled back", err)
			}
			assertHolds(t, dp, from, "after the rollback")
		})
	}
}

// assertHolds fails unless the data path holds exactly d.
func assertHolds(t *testing.T, dp *applytest.DataPath, d *config.Desired, when string) {
	t.Helper()
	now, err := apply.Observed(dp)
	if err != nil {
		t.Fatal(err)
	}
	if diff := config.Diff(now, d); !diff.Empty() {
		t.Fatalf("%s the data path differs from what it should hold:\n%s", when, diff)
	}
	if len(now.Services) != len(d.Services) {
		t.Fatalf("%s: %d services, want %d", when, len(now.Services), len(d.Services))
	}
}
