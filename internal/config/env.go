// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/sched"
)

// Env is what a configuration is checked against beyond itself: the data
// path it goes to and the host it runs on. The zero Env checks the file
// alone, as Validate does.
type Env struct {
	// Limits are the data path's capacities (a limit of 0 is not
	// checked).
	Limits loadbalancer.Limits
	// HeldLocalIPs are the local IPs the data path holds an id for, used
	// by a service or not: they count against Limits.LocalIPs whether
	// the configuration names them or not.
	HeldLocalIPs []netip.Addr
	// HostOwns tells whether the host has an address of its own: one it
	// had before xlb, not one xlb added. Nil knows no address.
	HostOwns func(netip.Addr) bool
}

// DesiredIn validates the configuration as Desired does and also against
// env: the data path's capacities, the local IPs it holds and the host's
// addresses. Every problem is in the *ValidationError, with its field
// path; nothing is changed anywhere.
func (c *Config) DesiredIn(env Env) (*Desired, error) {
	return c.check(env)
}

// capacity refuses a configuration the data path's maps cannot hold. Each
// limit is reported once, at the field where it is crossed.
func (ch *checker) capacity(svcs []Service, nodeLocalIPs []netip.Addr, env Env) {
	lim := env.Limits
	over := func(limit, n int) bool { return limit > 0 && n > limit }
	if over(lim.Services, len(svcs)) {
		ch.kindf(ErrCapacity, "services", "%d services; the data path holds at most %d (raise max_services, up to %d)",
			len(svcs), lim.Services, loadbalancer.MaxServiceCapacity)
	}
	total := 0
	for _, s := range svcs {
		total += len(s.Reals)
	}
	vips := map[netip.Addr]bool{}
	laddrs := map[netip.Addr]bool{}
	for _, a := range env.HeldLocalIPs {
		laddrs[a] = true
	}
	held := len(laddrs)
	reals, vipsDone, laddrsDone := 0, false, false
	for j, a := range nodeLocalIPs {
		laddrs[a] = true
		if !laddrsDone && over(lim.LocalIPs, len(laddrs)) {
			ch.kindf(ErrCapacity, fmt.Sprintf("node.local_ips[%d]", j),
				"%s is one local IP too many: the data path holds at most %d (max_local_ips) and keeps %d already", a, lim.LocalIPs, held)
			laddrsDone = true
		}
	}
	for i, s := range svcs {
		path := fmt.Sprintf("services[%d]", i)
		if a, err := netip.ParseAddr(s.VIP); err == nil && !vips[a] {
			vips[a] = true
			// (the data path holds a VIP per service: only a limit below
			// the services' is crossed before theirs)
			if !vipsDone && over(lim.VIPs, len(vips)) && (lim.Services == 0 || lim.VIPs < lim.Services) {
				ch.kindf(ErrCapacity, path+".vip", "%s is one VIP too many: the configuration has more than %d distinct VIPs, "+
					"the most the data path holds (one per service: raise max_services)", a, lim.VIPs)
				vipsDone = true
			}
		}
		for j, l := range s.LocalIPs {
			for _, a := range localIPAddrs(l) {
				if laddrs[a] {
					continue
				}
				laddrs[a] = true
				if !laddrsDone && over(lim.LocalIPs, len(laddrs)) {
					ch.kindf(ErrCapacity, fmt.Sprintf("%s.local_ips[%d]", path, j),
						"%s is one local IP too many: the data path holds at most %d (max_local_ips) and keeps %d already; "+
							"a local IP keeps its place while the pinned maps live, as the replies of its connections need it",
						a, lim.LocalIPs, held)
					laddrsDone = true
				}
			}
		}
		if over(lim.Reals, reals+len(s.Reals)) && !over(lim.Reals, reals) { // crossed in this service
			ch.kindf(ErrCapacity, fmt.Sprintf("%s.reals[%d]", path, lim.Reals-reals),
				"one real too many: the configuration has %d reals over all services and the data path holds at most %d "+
					"(raise max_reals, up to %d; a server in two services counts twice)", total, lim.Reals, loadbalancer.MaxRealCapacity)
		}
		reals += len(s.Reals)
	}
}

// table refuses reals whose schedule table the data path cannot build:
// a weighted round robin cycle (wrr, and lc and wlc until their first
// re-weighting) longer than sched.MaxTableSize, or more reals in service
// than a Maglev table (mh, sh) has slots.
func (ch *checker) table(path string, svc loadbalancer.Service, reals []loadbalancer.Real) {
	weights := make([]uint32, 0, len(reals))
	live := 0
	for _, r := range reals {
		weights = append(weights, r.Weight)
		if r.Weight > 0 {
			live++
		}
	}
	switch svc.Scheduler {
	case loadbalancer.WeightedRoundRobin, loadbalancer.LeastConn, loadbalancer.WeightedLeastConn:
		if n := sched.CycleLength(weights); n > sched.MaxTableSize {
			ch.kindf(ErrCapacity, path+".reals", "the weights make a %s table of %d slots (their sum over their "+
				"greatest common divisor); at most %d: use smaller or more even weights", svc.Scheduler, n, sched.MaxTableSize)
		}
	case loadbalancer.MaglevHash, loadbalancer.SourceHash:
		if live > sched.DefaultMaglevSize {
			ch.kindf(ErrCapacity, path+".reals", "%d reals with a weight above 0; a %s table of %d slots holds at most that many",
				live, svc.Scheduler, sched.DefaultMaglevSize)
		}
	default:
		if live > sched.MaxTableSize {
			ch.kindf(ErrCapacity, path+".reals", "%d reals with a weight above 0; a %s table holds at most %d",
				live, svc.Scheduler, sched.MaxTableSize)
		}
	}
}
