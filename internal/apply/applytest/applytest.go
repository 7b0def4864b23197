// SPDX-License-Identifier: Apache-2.0

// Package applytest is an in-memory data path for tests of what applies
// configurations (the daemon's apply, the API's test server).
package applytest

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// DataPath keeps services and reals in memory, as apply.DataPath, with
// the loaded data path's rules: its capacities (Capacity), real ids taken
// before the replaced ones are freed, local IPs held for good once used.
// Each call that changes something either fails before it changes
// anything or does all of it; Faults make chosen calls fail.
// The zero value is an empty data path with the compiled data path's
// capacities.
type DataPath struct {
	settings loadbalancer.Settings
	services []loadbalancer.Service
	reals    map[loadbalancer.ServiceKey][]loadbalancer.Real
	held     map[netip.Addr]bool // local IPs ever used

	// Capacity is the capacities enforced; the zero Limits are those of
	// the compiled data path (datapath.SpecLimits).
	Capacity loadbalancer.Limits

	// Calls counts the changes asked for.
	Calls int
	// Faults make chosen calls fail with ErrInjected.
	Faults []Fault
	// calls counts the calls of each method.
	calls map[string]int
}

// Fault fails the N-th call (counting from 1) of a method of the data
// path that changes something: "SetSettings", "AddService",
// "UpdateService", "RemoveService" or "SetReals"; Method "" counts the
// calls of them all (Calls).
type Fault struct {
	Method string
	N      int
}

// ErrInjected is the failure Faults inject.
var ErrInjected = errors.New("injected failure")

// ErrCapacity is what a change beyond Capacity fails with, as the data path
// fails when its maps are full.
var ErrCapacity = errors.New("data path full")

// specLimits are the compiled data path's capacities, read once.
var specLimits = sync.OnceValues(datapath.SpecLimits)

// change counts a call of method and fails it if asked to.
func (f *DataPath) change(method string) error {
	f.Calls++
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[method]++
	if slices.Contains(f.Faults, Fault{method, f.calls[method]}) || slices.Contains(f.Faults, Fault{"", f.Calls}) {
		return fmt.Errorf("%s, change %d: %w", method, f.Calls, ErrInjected)
	}
	return nil
}

// CallsOf returns how many times method was called.
func (f *DataPath) CallsOf(method string) int { return f.calls[method] }

// ResetCalls starts counting calls, of every method, from 0 again.
func (f *DataPath) ResetCalls() { f.Calls, f.calls = 0, nil }

// limits returns the capacities enforced.
func (f *DataPath) limits() loadbalancer.Limits {
	if f.Capacity != (loadbalancer.Limits{}) {
		return f.Capacity
	}
	l, err := specLimits()
	if err != nil {
		panic(err) // the object is compiled in: it always loads
	}
	return l
}

func (f *DataPath) index(k loadbalancer.ServiceKey) int {
	return slices.IndexFunc(f.services, func(s loadbalancer.Service) bool { return s.Key == k })
}

// SetSettings implements apply.DataPath.
func (f *DataPath) SetSettings(s loadbalancer.Settings) error {
	if err := f.change("SetSettings"); err != nil {
		return err
	}
	f.settings = s
	return nil
}

// AddService implements apply.DataPath.
func (f *DataPath) AddService(s loadbalancer.Service) error {
	if err := f.change("AddService"); err != nil {
		return err
	}
	if f.index(s.Key) >= 0 {
		return fmt.Errorf("add %s: exists", s.Key)
	}
	if err := f.fits(-1, s); err != nil {
		return fmt.Errorf("add %s: %w", s.Key, err)
	}
	f.services = append(f.services, s)
	f.holdLocalIPs(s)
	if f.reals == nil {
		f.reals = map[loadbalancer.ServiceKey][]loadbalancer.Real{}
	}
	f.reals[s.Key] = nil
	return nil
}

// fits tells whether the services fit the limits with s at index i (-1:
// added).
func (f *DataPath) fits(i int, s loadbalancer.Service) error {
	svcs := slices.Clone(f.services)
	if i < 0 {
		svcs = append(svcs, s)
	} else {
		svcs[i] = s
	}
	lim := f.limits()
	vips := map[netip.Addr]bool{}
	laddrs := map[netip.Addr]bool{}
	for a := range f.held {
		laddrs[a] = true
	}
	for _, o := range svcs {
		vips[o.Key.VIP] = true
		for _, a := range o.LocalIPs {
			laddrs[a] = true
		}
	}
	switch {
	case len(svcs) > lim.Services:
		return fmt.Errorf("%w: no free service id", ErrCapacity)
	case len(vips) > lim.VIPs:
		return fmt.Errorf("%w: no room for VIP %s", ErrCapacity, s.Key.VIP)
	case len(laddrs) > lim.LocalIPs:
		return fmt.Errorf("%w: no free local IP id", ErrCapacity)
	}
	return nil
}

func (f *DataPath) holdLocalIPs(s loadbalancer.Service) {
	if f.held == nil {
		f.held = map[netip.Addr]bool{}
	}
	for _, a := range s.LocalIPs {
		f.held[a] = true
	}
}

// UpdateService implements apply.DataPath.
func (f *DataPath) UpdateService(s loadbalancer.Service) error {
	if err := f.change("UpdateService"); err != nil {
		return err
	}
	i := f.index(s.Key)
	if i < 0 {
		return fmt.Errorf("update %s: no such service", s.Key)
	}
	if err := f.fits(i, s); err != nil {
		return fmt.Errorf("update %s: %w", s.Key, err)
	}
	f.services[i] = s
	f.holdLocalIPs(s)
	return nil
}

// RemoveService implements apply.DataPath.
func (f *DataPath) RemoveService(k loadbalancer.ServiceKey) error {
	if err := f.change("RemoveService"); err != nil {
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

// SetReals implements apply.DataPath. As the data path, it takes the ids
// of the new reals before it frees those of the reals they replace.
func (f *DataPath) SetReals(k loadbalancer.ServiceKey, reals []loadbalancer.Real) error {
	if err := f.change("SetReals"); err != nil {
		return err
	}
	if f.index(k) < 0 {
		return fmt.Errorf("reals of %s: no such service", k)
	}
	inUse, added := 0, 0
	for _, rs := range f.reals {
		inUse += len(rs)
	}
	for _, r := range reals {
		if !slices.ContainsFunc(f.reals[k], func(o loadbalancer.Real) bool { return o.AddrPort() == r.AddrPort() }) {
			added++
		}
	}
	if lim := f.limits().Reals; inUse+added > lim {
		return fmt.Errorf("reals of %s: %w: %d in use, %d more asked for, %d ids", k, ErrCapacity, inUse, added, lim)
	}
	f.reals[k] = slices.Clone(reals)
	return nil
}

// Services implements apply.DataPath.
func (f *DataPath) Services() []loadbalancer.Service { return slices.Clone(f.services) }

// Reals implements apply.DataPath.
func (f *DataPath) Reals(k loadbalancer.ServiceKey) ([]loadbalancer.Real, error) {
	return slices.Clone(f.reals[k]), nil
}

// Settings implements apply.DataPath.
func (f *DataPath) Settings() loadbalancer.Settings { return f.settings }

// Limits implements apply.DataPath.
func (f *DataPath) Limits() loadbalancer.Limits { return f.limits() }

// HeldLocalIPs implements apply.DataPath.
// Batch runs fn: the fake's changes take effect at once.
func (f *DataPath) Batch(fn func() error) error { return fn() }

func (f *DataPath) HeldLocalIPs() []netip.Addr {
	out := make([]netip.Addr, 0, len(f.held))
	for a := range f.held {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Desired parses a configuration file's text and returns what it asks
// for, failing the test on any error.
func Desired(t testing.TB, yaml string) *config.Desired {
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
