// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"strings"
)

// Scheduler chooses how new connections are spread over a service's reals.
type Scheduler uint8

// Schedulers; the values are the data path's enum xlb_sched.
const (
	RoundRobin         Scheduler = 0 // rr: reals in turn
	WeightedRoundRobin Scheduler = 1 // wrr: smooth weighted round robin
	MaglevHash         Scheduler = 2 // mh: Maglev consistent hashing of the 5-tuple
	SourceHash         Scheduler = 3 // sh: Maglev table indexed by the source address
	// LeastConn (lc) and WeightedLeastConn (wlc) are wrr over weights the
	// control plane derives from live connection counts every period
	// (the data path's SetLeastConnWeights); until the first period, the
	// configured ones.
	LeastConn         Scheduler = 4
	WeightedLeastConn Scheduler = 5
)

var schedulerNames = map[Scheduler]string{
	RoundRobin:         "rr",
	WeightedRoundRobin: "wrr",
	MaglevHash:         "mh",
	SourceHash:         "sh",
	LeastConn:          "lc",
	WeightedLeastConn:  "wlc",
}

func (s Scheduler) String() string {
	if name, ok := schedulerNames[s]; ok {
		return name
	}
	return fmt.Sprintf("sched(%d)", uint8(s))
}

// Valid reports whether s is one of the schedulers above.
func (s Scheduler) Valid() bool {
	_, ok := schedulerNames[s]
	return ok
}

// SchedulerNames lists the schedulers' ipvsadm names, in the order of
// their values, as the CLI's help says them: "rr, wrr, mh, sh, lc or wlc".
func SchedulerNames() string {
	names := make([]string, 0, len(schedulerNames))
	for i := range 256 {
		if n, ok := schedulerNames[Scheduler(i)]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseScheduler parses an ipvsadm scheduler name (SchedulerNames).
func ParseScheduler(name string) (Scheduler, error) {
	for s, n := range schedulerNames {
		if n == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown scheduler %q (want %s)", name, SchedulerNames())
}

// MarshalText writes the scheduler's ipvsadm name, as the API shows it.
func (s Scheduler) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a scheduler's ipvsadm name (ParseScheduler).
func (s *Scheduler) UnmarshalText(b []byte) error {
	v, err := ParseScheduler(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
