// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"time"
)

// Settings are the data path's runtime knobs, the equivalent of
// `ipvsadm --set` and of DPVS's local port range.
type Settings struct {
	TCPSynTimeout time.Duration // handshake not complete
	TCPTimeout    time.Duration // established
	TCPFinTimeout time.Duration // after FIN
	TCPRstTimeout time.Duration // after RST
	UDPTimeout    time.Duration
	// LocalPortMin and LocalPortMax bound the local ports FullNAT uses,
	// inclusive; the range is split evenly over the CPUs.
	LocalPortMin uint16
	LocalPortMax uint16
	// FIBCacheTTL is how long a next hop found by the kernel's FIB is
	// reused for a destination (whole seconds; 0 looks up every packet).
	// Route and neighbour changes take effect within it.
	FIBCacheTTL time.Duration
}

// DefaultSettings returns the timeouts of TimeoutsXLB and the local port
// range 1025-65535.
func DefaultSettings() Settings {
	s := Settings{LocalPortMin: 1025, LocalPortMax: 65535, FIBCacheTTL: time.Second}
	s.SetStateTimeouts(timeoutProfiles[TimeoutsXLB])
	return s
}

// The named sets of state timeouts (the configuration's timeouts.profile).
const (
	// TimeoutsXLB, the default: IPVS's established timeout (900 s: an
	// idle connection lives as long as under IPVS) and DPVS's handshake
	// and closing ones (SYN 30 s, FIN 7 s, RST 3 s), so that a closed
	// connection gives its local port back within seconds.
	TimeoutsXLB = "xlb"
	// TimeoutsIPVS is what IPVS and earlier xlb versions use: SYN 60 s,
	// established 900 s, FIN 120 s, RST 10 s, UDP 300 s.
	TimeoutsIPVS = "ipvs"
	// TimeoutsDPVS is DPVS's: SYN 30 s (its syn_recv), established 90 s,
	// FIN 7 s (fin_wait, time_wait, close_wait, last_ack), RST 3 s (its
	// close), UDP 300 s.
	TimeoutsDPVS = "dpvs"
)

// StateTimeouts are how long an entry lives without packets in each
// state.
type StateTimeouts struct {
	Syn, Established, Fin, Close, UDP time.Duration
}

var timeoutProfiles = map[string]StateTimeouts{
	TimeoutsXLB:  {Syn: 30 * time.Second, Established: 900 * time.Second, Fin: 7 * time.Second, Close: 3 * time.Second, UDP: 300 * time.Second},
	TimeoutsIPVS: {Syn: 60 * time.Second, Established: 900 * time.Second, Fin: 120 * time.Second, Close: 10 * time.Second, UDP: 300 * time.Second},
	TimeoutsDPVS: {Syn: 30 * time.Second, Established: 90 * time.Second, Fin: 7 * time.Second, Close: 3 * time.Second, UDP: 300 * time.Second},
}

// TimeoutProfile returns the named set of state timeouts; ok is false
// for an unknown name.
func TimeoutProfile(name string) (t StateTimeouts, ok bool) {
	t, ok = timeoutProfiles[name]
	return t, ok
}

// TimeoutProfileNames lists the names TimeoutProfile knows, the default
// first.
func TimeoutProfileNames() []string { return []string{TimeoutsXLB, TimeoutsIPVS, TimeoutsDPVS} }

// Of returns the timeout of state st (0 for a state without one).
func (t StateTimeouts) Of(st ConnState) time.Duration {
	switch st {
	case StateSynSent:
		return t.Syn
	case StateEstablished:
		return t.Established
	case StateFin:
		return t.Fin
	case StateClose:
		return t.Close
	case StateUDP:
		return t.UDP
	}
	return 0
}

// Or returns t with its zero timeouts taken from d.
func (t StateTimeouts) Or(d StateTimeouts) StateTimeouts {
	or := func(a, b time.Duration) time.Duration {
		if a != 0 {
			return a
		}
		return b
	}
	return StateTimeouts{Syn: or(t.Syn, d.Syn), Established: or(t.Established, d.Established), Fin: or(t.Fin, d.Fin),
		Close: or(t.Close, d.Close), UDP: or(t.UDP, d.UDP)}
}

// StateTimeouts returns the five state timeouts of s.
func (s Settings) StateTimeouts() StateTimeouts {
	return StateTimeouts{Syn: s.TCPSynTimeout, Established: s.TCPTimeout, Fin: s.TCPFinTimeout, Close: s.TCPRstTimeout, UDP: s.UDPTimeout}
}

// SetStateTimeouts sets the five state timeouts.
func (s *Settings) SetStateTimeouts(t StateTimeouts) {
	s.TCPSynTimeout, s.TCPTimeout, s.TCPFinTimeout, s.TCPRstTimeout, s.UDPTimeout = t.Syn, t.Established, t.Fin, t.Close, t.UDP
}

// Timeout returns how long a connection entry in state st lives without
// packets.
func (s Settings) Timeout(st ConnState) time.Duration {
	if t := s.StateTimeouts().Of(st); t != 0 {
		return t
	}
	return s.UDPTimeout
}

// MaxTimeout is the longest timeout the data path keeps (its clock
// counts seconds in 32 bits).
const MaxTimeout = 1 << 31 * time.Second

// Validate checks that every timeout is 0 (none) or whole seconds from
// 1 s to MaxTimeout.
func (t StateTimeouts) Validate() error {
	for st := range StateUDP + 1 {
		d := t.Of(st)
		if d != 0 && (d < time.Second || d > MaxTimeout || d%time.Second != 0) {
			return fmt.Errorf("%s timeout %v: want whole seconds from 1s to %v", st, d, MaxTimeout)
		}
	}
	return nil
}
