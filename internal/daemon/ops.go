// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/health"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/sched"
)

// What the daemon does while it runs, beside applying configurations:
// health checks take failed reals out of scheduling, and lc/wlc services
// are re-weighted from live connection counts.

// LeastConnPeriod is how often lc and wlc services are re-weighted. Each
// period walks the connection table once (about 0.1 s per million
// connections here), so it is not shorter.
const LeastConnPeriod = time.Second

// syncHealth starts, changes and stops health checks to match want, and
// brings back up the reals of services that no longer have a check.
// d.mu is held.
func (d *Daemon) syncHealth(want *config.Desired) {
	targets := map[health.Target]config.HealthCheck{}
	for _, svc := range want.Services {
		hc, checked := want.Health[svc.Key]
		for _, r := range want.Reals[svc.Key] {
			if !checked {
				if d.dp.RealDown(svc.Key, r.AddrPort()) {
					d.setHealth(svc.Key, r.AddrPort(), true, "its service has no health check")
				}
				continue
			}
			t := health.Target{Service: svc.Key, Real: r.AddrPort()}
			if len(svc.LocalIPs) > 0 {
				t.Source = svc.LocalIPs[0]
			}
			targets[t] = hc
		}
	}
	d.health.SetMaxExecRunning(want.MaxExecRunning)
	d.health.Sync(targets, func(t health.Target) bool { return !d.dp.RealDown(t.Service, t.Real) })
}

// onTransition is the monitor's report: a real went up or down.
func (d *Daemon) onTransition(tr health.Transition) {
	t := tr.Target
	reason := tr.Reason
	if tr.Up {
		reason = "passed " + strconv.Itoa(tr.Check.Rise) + " checks in a row"
	}
	if !d.setHealth(t.Service, t.Real, tr.Up, reason) || tr.Up || tr.Check.OnFail != "reset" {
		return
	}
	n, err := d.dp.FlushRealConns(t.Service, t.Real)
	if err != nil {
		d.log.Warn("reset the connections of a failed real", "service", t.Service.String(), "real", t.Real.String(), "err", err)
		return
	}
	d.log.Info("connections of a failed real reset (on_fail: reset)", "service", t.Service.String(), "real", t.Real.String(), "connections", n)
}

// setHealth marks a real up or down in the data path and logs it; it
// reports whether it did.
func (d *Daemon) setHealth(k loadbalancer.ServiceKey, ap netip.AddrPort, up bool, reason string) bool {
	err := d.dp.SetRealHealth(k, ap, up)
	if errors.Is(err, loadbalancer.ErrNotFound) {
		return false // removed meanwhile
	}
	if err != nil {
		d.log.Error("set real health", "service", k.String(), "real", ap.String(), "up", up, "err", err)
		return false
	}
	state := "down"
	if up {
		state = "up"
	}
	d.log.Warn("real "+state, "service", k.String(), "real", ap.String(), "reason", reason)
	d.healthChanges.Add(1)
	d.kickRoutes()
	return true
}

// leastConnPath is what re-weighting needs of the data path; tests give
// a fake.
type leastConnPath interface {
	Status() ([]loadbalancer.ServiceStatus, error)
	SetLeastConnWeights(loadbalancer.ServiceKey, map[netip.AddrPort]uint32) error
}

// leastConnLoop re-weights lc and wlc services every LeastConnPeriod
// until ctx ends.
func (d *Daemon) leastConnLoop(ctx context.Context) {
	runLeastConn(ctx, LeastConnPeriod, d.hasLeastConn, d.dp, d.log)
}

// runLeastConn re-weights the lc and wlc services of dp every period
// while any is configured (active), until ctx ends; errors are logged.
func runLeastConn(ctx context.Context, period time.Duration, active func() bool, dp leastConnPath, log *slog.Logger) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	prevConns := map[loadbalancer.ServiceKey]uint64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !active() {
			continue
		}
		if err := rebalance(dp, prevConns); err != nil {
			log.Warn("least-connection re-weighting", "err", err)
		}
	}
}

// rebalance computes and installs the weights of every lc/wlc service
// from one walk of the connection table. The arrivals expected in the
// next period are those of the last one: prevConns keeps each service's
// connection count from one call to the next.
func rebalance(dp leastConnPath, prevConns map[loadbalancer.ServiceKey]uint64) error {
	status, err := dp.Status()
	if err != nil {
		return err
	}
	seen := map[loadbalancer.ServiceKey]bool{}
	for _, s := range status {
		seen[s.Key] = true
		if s.Scheduler != loadbalancer.LeastConn && s.Scheduler != loadbalancer.WeightedLeastConn {
			continue
		}
		prev, seen := prevConns[s.Key]
		prevConns[s.Key] = s.Stats.Conns
		expected := 0.0
		if seen && s.Stats.Conns >= prev {
			expected = float64(s.Stats.Conns - prev)
		}
		in := make([]sched.LCReal, len(s.Reals))
		for i, r := range s.Reals {
			w := r.Weight
			if r.Down {
				w = 0
			}
			in[i] = sched.LCReal{Weight: w, Active: r.ActiveConns, Inactive: r.InactiveConns}
		}
		weights := sched.LeastConnWeights(in, s.Scheduler == loadbalancer.WeightedLeastConn, expected)
		m := make(map[netip.AddrPort]uint32, len(weights))
		for i, r := range s.Reals {
			m[r.AddrPort()] = weights[i]
		}
		if err := dp.SetLeastConnWeights(s.Key, m); err != nil && !errors.Is(err, loadbalancer.ErrNotFound) {
			return err
		}
	}
	for k := range prevConns { // services removed since
		if !seen[k] {
			delete(prevConns, k)
		}
	}
	return nil
}

func (d *Daemon) hasLeastConn() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.cur.Services {
		if s.Scheduler == loadbalancer.LeastConn || s.Scheduler == loadbalancer.WeightedLeastConn {
			return true
		}
	}
	return false
}

// ZeroCounters implements api.Backend.
func (d *Daemon) ZeroCounters(k *loadbalancer.ServiceKey) error { return d.dp.ZeroCounters(k) }

// Status implements api.Backend: the data path's status with the health
// of every checked real.
func (d *Daemon) Status() ([]loadbalancer.ServiceStatus, error) {
	st, err := d.dp.Status()
	if err != nil {
		return nil, err
	}
	states := d.health.States()
	reasons := d.nextHopReasons()
	for i := range st {
		for j := range st[i].Reals {
			r := &st[i].Reals[j]
			if r.Unresolved {
				r.NextHopReason = reasons[r.Addr]
			}
			hs, ok := states[st[i].Key][r.AddrPort()]
			if !ok {
				continue
			}
			r.Health, r.HealthReason = "up", ""
			if r.Down {
				r.Health, r.HealthReason = "down", hs.Reason
			}
		}
	}
	return st, nil
}
