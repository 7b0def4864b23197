// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// State is what the monitor knows of one checked real.
type State struct {
	Up bool `json:"up"`
	// Reason is why the last check failed; empty after a success.
	Reason string `json:"reason,omitempty"`
	// Since is when the real last changed state (or its checks began).
	Since time.Time `json:"since"`
	// Checks and Failures count this real's checks so far.
	Checks   uint64 `json:"checks"`
	Failures uint64 `json:"failures"`
}

// Transition is one real going up or down.
type Transition struct {
	Target Target
	Check  config.HealthCheck
	Up     bool
	Reason string
}

// realKey names a checked real.
type realKey struct {
	svc  loadbalancer.ServiceKey
	real netip.AddrPort
}

// run is the checking of one real.
type run struct {
	target Target
	check  config.HealthCheck
	cancel context.CancelFunc
	state  State
	// consecutive results of the current streak
	successes, failures int
}

// Monitor checks reals and reports their transitions. Its methods may
// be called from any goroutine.
type Monitor struct {
	report func(Transition)
	check  func(context.Context, config.HealthCheck, Target) error
	// execSlots bounds the exec check commands running at once.
	execSlots *Limiter

	mu   sync.Mutex
	runs map[realKey]*run
	wg   sync.WaitGroup
}

// NewMonitor returns a monitor that calls report, from the checking
// goroutine, each time a real goes down (Fall failures in a row) or up
// (Rise successes in a row). report must not call Sync or Close.
//
// At most config.DefaultMaxExecRunning exec check commands run at once
// (SetMaxExecRunning changes it): a check that finds no slot free waits
// for one within its timeout, and fails if none frees in time.
func NewMonitor(report func(Transition)) *Monitor {
	m := &Monitor{report: report, runs: map[realKey]*run{}, execSlots: NewLimiter(config.DefaultMaxExecRunning)}
	m.check = func(ctx context.Context, c config.HealthCheck, t Target) error { return check(ctx, c, t, m.execSlots) }
	return m
}

// SetMaxExecRunning changes how many exec check commands may run at
// once; n <= 0 is config.DefaultMaxExecRunning.
func (m *Monitor) SetMaxExecRunning(n int) {
	if n <= 0 {
		n = config.DefaultMaxExecRunning
	}
	m.execSlots.SetLimit(n)
}

// Sync makes the monitor check exactly the targets of want: it starts
// the new ones in the state up(target) says (the data path's: a real
// that was down before a daemon restart stays down until Rise
// successes), stops the removed ones, and restarts those whose check or
// source changed, keeping their state. It does not wait for stopped
// checks to end; a stopped check reports nothing more.
func (m *Monitor) Sync(want map[Target]config.HealthCheck, up func(Target) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[realKey]bool{}
	for t, c := range want {
		k := realKey{t.Service, t.Real}
		seen[k] = true
		old, ok := m.runs[k]
		if ok && old.target == t && old.check == c {
			continue
		}
		r := &run{target: t, check: c}
		if ok {
			old.cancel()
			r.state = old.state
		} else {
			r.state = State{Up: up(t), Since: time.Now()}
		}
		m.start(r)
		m.runs[k] = r
	}
	for k, r := range m.runs {
		if !seen[k] {
			r.cancel()
			delete(m.runs, k)
		}
	}
}

func (m *Monitor) start(r *run) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(time.Duration(r.check.Interval))
		defer tick.Stop()
		for {
			err := m.check(ctx, r.check, r.target)
			if ctx.Err() != nil {
				return
			}
			if t, changed := m.record(r, err); changed {
				m.report(t)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// record counts one result and says whether the real changed state.
func (m *Monitor) record(r *run, err error) (Transition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs[realKey{r.target.Service, r.target.Real}] != r {
		return Transition{}, false // stopped or replaced meanwhile
	}
	s := &r.state
	s.Checks++
	if err == nil {
		r.successes, r.failures = r.successes+1, 0
		s.Reason = ""
	} else {
		r.successes, r.failures = 0, r.failures+1
		s.Failures++
		s.Reason = err.Error()
	}
	switch {
	case !s.Up && r.successes >= r.check.Rise:
		s.Up = true
	case s.Up && r.failures >= r.check.Fall:
		s.Up = false
	default:
		return Transition{}, false
	}
	s.Since = time.Now()
	return Transition{Target: r.target, Check: r.check, Up: s.Up, Reason: s.Reason}, true
}

// States returns the state of every checked real.
func (m *Monitor) States() map[loadbalancer.ServiceKey]map[netip.AddrPort]State {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[loadbalancer.ServiceKey]map[netip.AddrPort]State{}
	for k, r := range m.runs {
		if out[k.svc] == nil {
			out[k.svc] = map[netip.AddrPort]State{}
		}
		out[k.svc][k.real] = r.state
	}
	return out
}

// Close stops every check and waits for them to end.
func (m *Monitor) Close() {
	m.mu.Lock()
	for k, r := range m.runs {
		r.cancel()
		delete(m.runs, k)
	}
	m.mu.Unlock()
	m.wg.Wait()
}
