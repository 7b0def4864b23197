// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

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
	// Limits are the capacities of the data path's maps.
	Limits() loadbalancer.Limits
	// HeldLocalIPs are the local IPs it holds an id for, used or not.
	HeldLocalIPs() []netip.Addr
	// Batch runs fn, whose changes settle together when it returns:
	// their schedule tables are installed in one update.
	Batch(fn func() error) error
}

// HostOwns tells whether the host has an address of its own, one it had
// before xlb rather than one xlb added (see config.Env); nil knows none.
type HostOwns func(netip.Addr) bool

// Check validates cfg as it would be applied to dp on this host: the
// file's own rules, the data path's capacities (with the local IPs it
// holds) and the host's addresses. It changes nothing.
func Check(dp DataPath, cfg *config.Config, owns HostOwns) (*config.Desired, error) {
	return cfg.DesiredIn(config.Env{Limits: dp.Limits(), HeldLocalIPs: dp.HeldLocalIPs(), HostOwns: owns})
}

// Move moves dp from cur to want, a configuration Check accepted, and
// returns the changes made. Besides Check's validation it refuses what a
// running daemon cannot change (the attached interfaces, the XDP mode,
// the workers).
// On error the data path holds cur, unless the error says that rolling
// back failed too.
func Move(dp DataPath, cur, want *config.Desired) (config.Changes, error) {
	if !slices.Equal(want.Interfaces, cur.Interfaces) || want.Mode != cur.Mode {
		return config.Changes{}, &config.ValidationError{Problems: []string{
			"interfaces, xdp_mode: changing the attached interfaces needs a daemon restart"}}
	}
	if !want.Workers.Equal(cur.Workers) {
		return config.Changes{}, &config.ValidationError{Problems: []string{
			"workers: changing the worker CPUs needs a daemon restart"}}
	}
	return Transition(dp, cur, want)
}

// ErrRollback is wrapped by the error of a transition whose roll back
// failed too: the data path then holds neither configuration, and the
// next transition starts from what it holds.
var ErrRollback = errors.New("roll back failed")

// Transition moves the data path from cur to next. It starts from what
// the data path holds (cur, unless an earlier roll back failed), and
// refuses before any change a transition that would run out of real ids
// on its way. When a step fails, it restores cur and returns the
// failure, with the restore's if that failed too (wrapping ErrRollback).
func Transition(dp DataPath, cur, next *config.Desired) (config.Changes, error) {
	from, err := Observed(dp)
	if err != nil {
		return config.Changes{}, fmt.Errorf("read the data path: %w", err)
	}
	changes := config.Diff(from, next)
	if err := checkRealIDs(dp.Limits().Reals, from, next, changes); err != nil {
		return changes, err
	}
	var oerr error
	err = dp.Batch(func() error {
		err := applyChanges(dp, from, changes)
		if err == nil {
			return nil
		}
		var now *config.Desired
		if now, oerr = Observed(dp); oerr == nil {
			oerr = applyChanges(dp, now, config.Diff(now, cur))
		}
		return err
	})
	if err == nil {
		return changes, nil
	}
	if oerr != nil {
		return changes, fmt.Errorf("apply: %w; %w: the data path holds part of the change, "+
			"and the next apply starts from what it holds: %w", err, ErrRollback, oerr)
	}
	return changes, fmt.Errorf("apply (rolled back, nothing changed): %w", err)
}

// applyChanges carries out changes, computed from what the data path
// holds (from), in an order that never leaves a service without what it
// refers to: settings, removals, additions, updates, then the real lists
// (see realsOrder).
func applyChanges(dp DataPath, from *config.Desired, c config.Changes) error {
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
	for _, k := range realsOrder(from, c.SetReals) {
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
