// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// idAlloc hands out the indexes of an array map. Freed ids are reused in
// the order they were freed and only after every never-used id is taken,
// so a real's id is not given to another real while connections that
// still name it are likely to live.
type idAlloc struct {
	what string
	next uint32
	max  uint32
	free []uint32
	held []uint32 // freed, but an unsettled change may still name them (batch.go)
}

// hasFree reports whether get has an id to give without held ones.
func (a *idAlloc) hasFree() bool { return a.next < a.max || len(a.free) > 0 }

// hold frees id once the changes pending now have settled (release).
func (a *idAlloc) hold(id uint32) { a.held = append(a.held, id) }

// release frees the held ids.
func (a *idAlloc) release() {
	a.free = append(a.free, a.held...)
	a.held = a.held[:0]
}

func (a *idAlloc) get() (uint32, error) {
	if a.next < a.max {
		a.next++
		return a.next - 1, nil
	}
	if len(a.free) == 0 {
		return 0, fmt.Errorf("no free %s id: all %d in use", a.what, a.max)
	}
	id := a.free[0]
	a.free = a.free[1:]
	return id, nil
}

func (a *idAlloc) put(id uint32) { a.free = append(a.free, id) }

// realState is one real of a service and the id the data path knows it by.
type realState struct {
	id   uint32
	real loadbalancer.Real
	// down: the real failed its health check; it stays out of the
	// schedule table until it is up again.
	down bool
	// unresolved: its next hop has no link-layer address yet (the
	// daemon's neighbour lookup says so); it stays out of the schedule
	// table until it has one.
	unresolved bool
	// lcWeight is the weight an lc/wlc service schedules it with, set
	// every period from connection counts; 0 before the first period
	// (lcSet false), when the configured weight counts.
	lcWeight uint32
	lcSet    bool
}

// tableWeight is the weight the schedule table of a service with
// scheduler s gives the real.
func (r realState) tableWeight(s loadbalancer.Scheduler) uint32 {
	switch {
	case r.down || r.unresolved || r.real.Weight == 0:
		return 0
	case r.lcSet && (s == loadbalancer.LeastConn || s == loadbalancer.WeightedLeastConn):
		return r.lcWeight
	}
	return r.real.Weight
}

// serviceState is what the registry remembers of one service.
type serviceState struct {
	id       uint32
	svc      loadbalancer.Service
	laddrIDs []uint32
	reals    []realState
}

// localIP is one local IP and the number of services using it.
type localIP struct {
	id   uint32
	refs int
}

// registry mirrors what the maps hold, so that updates can be computed
// as differences and ids allocated without reading the maps back.
type registry struct {
	services map[loadbalancer.ServiceKey]*serviceState
	localIPs map[netip.Addr]*localIP
	vips     map[netip.Addr]int
	svcIDs   idAlloc
	realIDs  idAlloc
	laddrIDs idAlloc
}

func (r *registry) init(maxServices, maxReals, maxLaddrs uint32) {
	r.services = map[loadbalancer.ServiceKey]*serviceState{}
	r.localIPs = map[netip.Addr]*localIP{}
	r.vips = map[netip.Addr]int{}
	r.svcIDs = idAlloc{what: "service", max: maxServices}
	r.realIDs = idAlloc{what: "real", max: maxReals}
	r.laddrIDs = idAlloc{what: "local IP", max: maxLaddrs}
}
