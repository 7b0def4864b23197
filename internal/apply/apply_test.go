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

// before and after differ in every way a transition can: the settings,
// a service removed (udp 53), one added (the IPv6 one), one updated
// (scheduler, local IPs) whose reals change (a weight, one removed, one
// added).
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
  - {vip: 192.0.2.10, port: 80, protocol: tcp, scheduler: wrr, local_ips: [198.51.100.254, 198.51.100.253],
     reals: [{address: 198.51.100.1, port: 80, weight: 3}, {address: 198.51.100.3, port: 80}]}
  - {vip: 2001:db8::10, port: 443, protocol: tcp, local_ips: ["2001:db8:1::fe"],
     reals: [{address: "2001:db8:1::1", port: 443}]}
`
)

// daemon keeps what it believes runs as internal/daemon does: the
// configuration it last applied without an error.
type daemon struct {
	dp  apply.DataPath
	cur *config.Desired
}

// newDaemon returns a daemon whose in-memory data path holds yaml, its
// calls counted from there.
func newDaemon(t *testing.T, yaml string) (*daemon, *applytest.DataPath) {
	t.Helper()
	dp := &applytest.DataPath{}
	d := emptyDaemon(dp)
	if err := d.apply(t, yaml); err != nil {
		t.Fatal(err)
	}
	dp.ResetCalls()
	return d, dp
}

// emptyDaemon returns a daemon of a data path that holds nothing, with
// interface eth0 attached.
func emptyDaemon(dp apply.DataPath) *daemon {
	return &daemon{dp: dp, cur: &config.Desired{Interfaces: []string{"eth0"}, Settings: dp.Settings()}}
}

func (d *daemon) apply(t *testing.T, yaml string) error {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return d.applyConfig(cfg)
}

func (d *daemon) applyConfig(cfg *config.Config) error {
	want, err := apply.Check(d.dp, cfg, nil)
	if err != nil {
		return err
	}
	if _, err := apply.Move(d.dp, d.cur, want); err != nil {
		return err
	}
	d.cur = want
	return nil
}

// TestTransitionFailsAtEveryStep fails each call of the transition from
// before to after in turn (every method, every call of it): the data
// path must hold before exactly, the error must say both what failed and
// that nothing changed, and the daemon's view must be what the maps hold.
func TestTransitionFailsAtEveryStep(t *testing.T) {
	clean, cleanDP := newDaemon(t, before)
	if err := clean.apply(t, after); err != nil {
		t.Fatal(err)
	}
	assertHolds(t, clean.dp, applytest.Desired(t, after), "after the transition")
	methods := []string{"SetSettings", "RemoveService", "AddService", "UpdateService", "SetReals"}
	for _, m := range methods {
		if cleanDP.CallsOf(m) == 0 {
			t.Fatalf("the transition makes no %s call; want every kind of step", m)
		}
	}
	for _, m := range methods {
		for n := 1; n <= cleanDP.CallsOf(m); n++ {
			t.Run(fmt.Sprintf("%s %d fails", m, n), func(t *testing.T) {
				d, dp := newDaemon(t, before)
				dp.Faults = []applytest.Fault{{Method: m, N: n}}
				err := d.apply(t, after)
				if !errors.Is(err, applytest.ErrInjected) || !strings.Contains(err.Error(), "rolled back, nothing changed") {
					t.Fatalf("got %v, want the injected failure, rolled back", err)
				}
				assertHolds(t, d.dp, applytest.Desired(t, before), "after the roll back")
				assertHolds(t, d.dp, d.cur, "what the daemon believes")
			})
		}
	}
}

// TestRollbackFails fails a step of the transition and then each step of
// its roll back in turn: the error must say that the roll back failed,
// and the next apply, of either configuration, must bring the data path
// to it exactly, though the daemon believes the old one runs.
func TestRollbackFails(t *testing.T) {
	clean, cleanDP := newDaemon(t, before)
	if err := clean.apply(t, after); err != nil {
		t.Fatal(err)
	}
	for f := 1; f <= cleanDP.Calls; f++ {
		// the calls the roll back makes when step f fails
		d, dp := newDaemon(t, before)
		dp.Faults = []applytest.Fault{{N: f}}
		if err := d.apply(t, after); !errors.Is(err, applytest.ErrInjected) {
			t.Fatalf("step %d: got %v, want the injected failure", f, err)
		}
		for r := f + 1; r <= dp.Calls; r++ {
			t.Run(fmt.Sprintf("step %d then roll back step %d fail", f, r-f), func(t *testing.T) {
				d, dp := newDaemon(t, before)
				dp.Faults = []applytest.Fault{{N: f}, {N: r}}
				err := d.apply(t, after)
				if !errors.Is(err, applytest.ErrInjected) || !errors.Is(err, apply.ErrRollback) ||
					!strings.Contains(err.Error(), "roll back failed") {
					t.Fatalf("got %v, want the injected failure and a failed roll back", err)
				}
				dp.Faults = nil
				for _, next := range []string{before, after} {
					if err := d.apply(t, next); err != nil {
						t.Fatalf("the next apply: %v", err)
					}
					assertHolds(t, d.dp, applytest.Desired(t, next), "after the next apply")
					assertHolds(t, d.dp, d.cur, "what the daemon believes")
				}
			})
		}
	}
}

// assertHolds fails unless the data path holds exactly d.
func assertHolds(t *testing.T, dp apply.DataPath, d *config.Desired, when string) {
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
