// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// fakeDataPath keeps services and reals in memory and fails the
// failAt-th change (counting from 1; 0 never fails).
type fakeDataPath struct {
	settings loadbalancer.Settings
	services []loadbalancer.Service
	reals    map[loadbalancer.ServiceKey][]loadbalancer.Real
	calls    int
	failAt   int
}

var errInjected = errors.New("injected failure")

func (f *fakeDataPath) change() error {
	f.calls++
	if f.calls == f.failAt {
		return fmt.Errorf("change %d: %w", f.calls, errInjected)
	}
	return nil
}

func (f *fakeDataPath) index(k loadbalancer.ServiceKey) int {
	return slices.IndexFunc(f.services, func(s loadbalancer.Service) bool { return s.Key == k })
}

func (f *fakeDataPath) SetSettings(s loadbalancer.Settings) error {
	if err := f.change(); err != nil {
		return err
	}
	f.settings = s
	return nil
}

func (f *fakeDataPath) AddService(s loadbalancer.Service) error {
	if err := f.change(); err != nil {
		return err
	}
	if f.index(s.Key) >= 0 {
		return fmt.Errorf("add %s: exists", s.Key)
	}
	f.services = append(f.services, s)
	f.reals[s.Key] = nil
	return nil
}

func (f *fakeDataPath) UpdateService(s loadbalancer.Service) error {
	if err := f.change(); err != nil {
		return err
	}
	i := f.index(s.Key)
	if i < 0 {
		return fmt.Errorf("update %s: no such service", s.Key)
	}
	f.services[i] = s
	return nil
}

func (f *fakeDataPath) RemoveService(k loadbalancer.ServiceKey) error {
	if err := f.change(); err != nil {
		return err
	}
	i := f.index(k)
	if i < 0 {
		return fmt.Errorf("remove %s: no such service", k)
	}
	f.services = slices.Delete(f.services, i, i+1)
	delete(f.reals, k)
	return nil
}

func (f *fakeDataPath) SetReals(k loadbalancer.ServiceKey, reals []loadbalancer.Real) error {
	if err := f.change(); err != nil {
		return err
	}
	if f.index(k) < 0 {
		return fmt.Errorf("reals of %s: no such service", k)
	}
	f.reals[k] = slices.Clone(reals)
	return nil
}

func (f *fakeDataPath) Services() []loadbalancer.Service { return slices.Clone(f.services) }

func (f *fakeDataPath) Reals(k loadbalancer.ServiceKey) ([]loadbalancer.Real, error) {
	return slices.Clone(f.reals[k]), nil
}

func (f *fakeDataPath) Settings() loadbalancer.Settings { return f.settings }

func desired(t *testing.T, yaml string) *config.Desired {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	d, err := cfg.Desired()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

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
	from, to := desired(t, before), desired(t, after)
	newDP := func() *fakeDataPath {
		dp := &fakeDataPath{reals: map[loadbalancer.ServiceKey][]loadbalancer.Real{}}
		if _, err := transition(dp, &config.Desired{Settings: dp.Settings()}, from); err != nil {
			t.Fatal(err)
		}
		dp.calls = 0
		return dp
	}
	dp := newDP()
	changes, err := transition(dp, from, to)
	if err != nil {
		t.Fatal(err)
	}
	steps := dp.calls
	if steps < 5 {
		t.Fatalf("transition took %d steps (%s); want settings, remove, add, update and reals", steps, changes)
	}
	assertHolds(t, dp, to, "after the transition")

	for failAt := 1; failAt <= steps; failAt++ {
		t.Run(fmt.Sprintf("step %d fails", failAt), func(t *testing.T) {
			dp := newDP()
			dp.failAt = failAt
			_, err := transition(dp, from, to)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "rolled back, nothing changed") {
				t.Fatalf("got %v, want the injected failure, rolled back", err)
			}
			assertHolds(t, dp, from, "after the rollback")
		})
	}
}

// assertHolds fails unless the data path holds exactly d.
func assertHolds(t *testing.T, dp *fakeDataPath, d *config.Desired, when string) {
	t.Helper()
	now, err := observed(dp)
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

func TestHostAddrs(t *testing.T) {
	got := hostAddrs(desired(t, after))
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.254"),
		netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:1::fe")}
	if !slices.Equal(got, want) {
		t.Fatalf("hostAddrs = %v, want %v (every VIP and local IP once, in file order)", got, want)
	}
	if hostAddrs(nil) != nil {
		t.Fatal("no configuration, no addresses")
	}
}
