// SPDX-License-Identifier: Apache-2.0

package loadbalancer

// Counters are a service's or a real's traffic counters, summed over CPUs.
// In is the client -> real direction, Out the replies, as in ipvsadm.
type Counters struct {
	Conns      uint64
	InPackets  uint64
	InBytes    uint64
	OutPackets uint64
	OutBytes   uint64
}

// RealStatus is a real with its counters and connections (ipvsadm's
// ActiveConn: established; InActConn: every other live state).
type RealStatus struct {
	Real
	Stats         Counters
	ActiveConns   int
	InactiveConns int
	// Down: the real failed its health check (no new connections).
	Down bool
	// Unresolved: its next hop has no link-layer address yet (no new
	// connections until it has); NextHopReason says why.
	Unresolved    bool
	NextHopReason string
	// TableWeight is the weight the schedule table gives it now: 0 when
	// down or drained, the derived weight for lc/wlc.
	TableWeight uint32
	// Health is up or down for a real its service checks, else empty;
	// HealthReason says why its last check failed. The daemon fills
	// them in (the data path knows only Down).
	Health, HealthReason string
}

// TakesConnections reports whether the real gets new connections: up (or
// unchecked), its next hop resolved, a weight above 0.
func (r RealStatus) TakesConnections() bool { return !r.Down && !r.Unresolved && r.Weight > 0 }

// ServiceStatus is a service with its counters and its reals'.
type ServiceStatus struct {
	Service
	Stats Counters
	// NoLport counts its new connections dropped as no_lport: every
	// local port tried was held.
	NoLport uint64
	Reals   []RealStatus
}
