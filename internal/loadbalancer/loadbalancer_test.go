// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"testing"
	"time"
)

// TestText checks that every protocol, scheduler and connection state
// reads back from the text the API writes.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		name string
		have interface {
			MarshalText() ([]byte, error)
		}
		read func([]byte) (any, error)
		want string
	}{
		{"tcp", TCP, func(b []byte) (any, error) { var v Proto; return v, v.UnmarshalText(b) }, "tcp"},
		{"udp", UDP, func(b []byte) (any, error) { var v Proto; return v, v.UnmarshalText(b) }, "udp"},
		{"wlc", WeightedLeastConn, func(b []byte) (any, error) { var v Scheduler; return v, v.UnmarshalText(b) }, "wlc"},
		{"sh", SourceHash, func(b []byte) (any, error) { var v Scheduler; return v, v.UnmarshalText(b) }, "sh"},
		{"fin", StateFin, func(b []byte) (any, error) { var v ConnState; return v, v.UnmarshalText(b) }, "FIN_WAIT"},
		{"udp state", StateUDP, func(b []byte) (any, error) { var v ConnState; return v, v.UnmarshalText(b) }, "UDP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.have.MarshalText()
			if err != nil || string(b) != tc.want {
				t.Fatalf("MarshalText = %q, %v; want %q", b, err, tc.want)
			}
			if _, err := tc.read(b); err != nil {
				t.Fatalf("UnmarshalText(%q): %v", b, err)
			}
		})
	}
	for _, s := range []Scheduler{RoundRobin, WeightedRoundRobin, MaglevHash, SourceHash, LeastConn, WeightedLeastConn} {
		var v Scheduler
		if err := v.UnmarshalText([]byte(s.String())); err != nil || v != s {
			t.Errorf("scheduler %s reads back as %s, %v", s, v, err)
		}
	}
	for s := StateSynSent; s <= StateUDP; s++ {
		if v, err := ParseConnState(s.String()); err != nil || v != s {
			t.Errorf("state %s reads back as %s, %v", s, v, err)
		}
	}
}

// TestTimeout checks the idle timeout of each connection state.
func TestTimeout(t *testing.T) {
	s := Settings{TCPSynTimeout: time.Minute, TCPTimeout: time.Minute, TCPFinTimeout: 30 * time.Second,
		TCPRstTimeout: 10 * time.Second, UDPTimeout: 10 * time.Second}
	for _, tc := range []struct {
		have ConnState
		want time.Duration
	}{
		{StateSynSent, time.Minute}, {StateEstablished, time.Minute}, {StateFin, 30 * time.Second},
		{StateClose, 10 * time.Second}, {StateUDP, 10 * time.Second},
	} {
		if got := s.Timeout(tc.have); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.have, got, tc.want)
		}
	}
}

// TestSchedulerNames: the help's list, in the order of the values.
func TestSchedulerNames(t *testing.T) {
	if got := SchedulerNames(); got != "rr, wrr, mh, sh, lc or wlc" {
		t.Errorf("SchedulerNames() = %q", got)
	}
}
