// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// DataPath is what applying a configuration needs of the data path: the
// loaded datapath.Datapath, or applytest.DataPath in tests.
type DataPath interface {
	SetSettings(loadbalancer.Settings) error
	AddService(loadbalancer.Service) error
	UpdateService(loadbalancer.Service) error
	RemoveService(loadbalancer.ServiceKey) error
	SetReals(loadbalancer.ServiceKey, []loadbalancer.Real) error
	Services() []loadbalancer.Service
	Reals(loadbalancer.ServiceKey) ([]loadbalancer.Real, error)
	Settings() loadbalancer.Settings
}

// applyChanges carries out changes in an order that never leaves a
// service without what it refers to: settings, removals, additions with
// their reals, updates, then the other real lists.
func applyChanges(dp DataPath, c config.Changes) error {
	if c.Settings != nil {
		if err := dp.SetSettings(*c.Settings); err != nil {
			return err
		}
	}
	for _, k := range c.Remove {
		if err := dp.RemoveService(k); err != nil {
			return err
		}
	}
	for _, s := range c.Add {
		if err := dp.AddService(s); err != nil {
			return err
		}
	}
	for _, s := range c.Update {
		if err := dp.UpdateService(s); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(c.SetReals) {
		if err := dp.SetReals(k, c.SetReals[k]); err != nil {
			return err
		}
	}
	return nil
}

// Observed reads what the data path holds now, as a Desired, so that a
// failed change can be rolled back from wherever it stopped.
func Observed(dp DataPath) (*config.Desired, error) {
	d := &config.Desired{Settings: dp.Settings(), Reals: map[loadbalancer.ServiceKey][]loadbalancer.Real{}}
	for _, s := range dp.Services() {
		d.Services = append(d.Services, s)
		reals, err := dp.Reals(s.Key)
		if err != nil {
			return nil, err
		}
		d.Reals[s.Key] = reals
	}
	return d, nil
}

// Transition moves the data path from cur to next. When a step fails, it
// restores cur and returns the failure (and the restore's, if any).
func Transition(dp DataPath, cur, next *config.Desired) (config.Changes, error) {
	changes := config.Diff(cur, next)
	err := applyChanges(dp, changes)
	if err == nil {
		return changes, nil
	}
	now, oerr := Observed(dp)
	if oerr == nil {
		oerr = applyChanges(dp, config.Diff(now, cur))
	}
	if oerr != nil {
		return changes, errors.Join(fmt.Errorf("apply: %w", err), fmt.Errorf("roll back: %w", oerr))
	}
	return changes, fmt.Errorf("apply (rolled back, nothing changed): %w", err)
}

// Config moves dp from cur, the configuration that runs, to cfg and returns
// what cfg asks for and the changes made. Besides the file's own
// validation it refuses what a running daemon cannot change (the attached
// interfaces, the XDP mode). On error the data path holds cur.
func Config(dp DataPath, cur *config.Desired, cfg *config.Config) (*config.Desired, config.Changes, error) {
	want, err := cfg.Desired()
	if err != nil {
		return nil, config.Changes{}, err
	}
	if !slices.Equal(want.Interfaces, cur.Interfaces) || want.Mode != cur.Mode {
		return nil, config.Changes{}, &config.ValidationError{Problems: []string{
			"interfaces, xdp_mode: changing the attached interfaces needs a daemon restart"}}
	}
	changes, err := Transition(dp, cur, want)
	if err != nil {
		return nil, changes, err
	}
	return want, changes, nil
}

// sortedKeys returns a map's service keys in a stable order.
func sortedKeys[V any](m map[loadbalancer.ServiceKey]V) []loadbalancer.ServiceKey {
	keys := make([]loadbalancer.ServiceKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b loadbalancer.ServiceKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}
