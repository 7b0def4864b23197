// SPDX-License-Identifier: Apache-2.0

// Package applytest is an in-memory data path for tests of what applies
// configurations (the daemon's apply, the API's test server).
package applytest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// DataPath keeps services and reals in memory, as apply.DataPath, and
// fails the FailAt-th change (counting from 1; 0 never fails). The zero
// value is an empty data path.
type DataPath struct {
	settings loadbalancer.Settings
	services []loadbalancer.Service
	reals    map[loadbalancer.ServiceKey][]loadbalancer.Real
	// Calls counts the changes asked for; FailAt makes one of them fail
	// with ErrInjected.
	Calls  int
	FailAt int
}

// ErrInjected is the failure FailAt injects.
var ErrInjected = errors.New("injected failure")

func (f *DataPath) change() error {
	f.Calls++
	if f.Calls == f.FailAt {
		return fmt.Errorf("change %d: %w", f.Calls, ErrInjected)
	}
	return nil
}

func (f *DataPath) index(k loadbalancer.ServiceKey) int {
	return slices.IndexFunc(f.services, func(s loadbalancer.Service) bool { return s.Key == k })
}

// SetSettings implements apply.DataPath.
func (f *DataPath) SetSettings(s loadbalancer.Settings) error {
	if err := f.change(); err != nil {
		return err
	}
	f.settings = s
	return nil
}

// AddService implements apply.DataPath.
func (f *DataPath) AddService(s loadbalancer.Service) error {
	if err := f.change(); err != nil {
		return err
	}
	if f.index(s.Key) >= 0 {
		return fmt.Errorf("add %s: exists", s.Key)
	}
	f.services = append(f.services, s)
	if f.reals == nil {
		f.reals = map[loadbalancer.ServiceKey][]loadbalancer.Real{}
	}
	f.reals[s.Key] = nil
	return nil
}

// UpdateService implements apply.DataPath.
func (f *DataPath) UpdateService(s loadbalancer.Service) error {
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

// RemoveService implements apply.DataPath.
func (f *DataPath) RemoveService(k loadbalancer.ServiceKey) error {
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

// SetReals implements apply.DataPath.
func (f *DataPath) SetReals(k loadbalancer.ServiceKey, reals []loadbalancer.Real) error {
	if err := f.change(); err != nil {
		return err
	}
	if f.index(k) < 0 {
		return fmt.Errorf("reals of %s: no such service", k)
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
