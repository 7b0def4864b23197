// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"net/http"
	"net/netip"
	"time"
)

// DaemonInfo is what the daemon says of itself (Backend.Daemon).
type DaemonInfo struct {
	Started    time.Time `json:"started"`
	ConfigPath string    `json:"config_path"`
	// FileRevision is the revision at which the file was last applied
	// (the start, a reload): a later revision in force has changes the
	// file does not, which a reload drops.
	FileRevision uint64      `json:"file_revision"`
	PinPath      string      `json:"pin_path"`
	Interfaces   []Interface `json:"interfaces"`
	// MultiBuffer: the program takes frames of several buffers (jumbo
	// frames in native mode).
	MultiBuffer bool `json:"multi_buffer"`
	// WorkerCPUs are the CPUs the balancer runs on behind the steering
	// program (the configuration's workers; none: where frames are
	// received).
	WorkerCPUs []int `json:"worker_cpus,omitempty"`
	// HostWarnings are what the daemon found wrong with its host, e.g. a
	// pin path on a bpffs private to its mount namespace.
	HostWarnings []string `json:"host_warnings,omitempty"`
}

// Interface is an interface the data path is attached to.
type Interface struct {
	Name string `json:"name"`
	Mode string `json:"mode"` // native | generic
}

// Status is GET /v1/status: the daemon, its configuration and its data
// path at a glance, and what needs the operator's attention (xlb status,
// as cilium status).
type Status struct {
	Version string `json:"version"`
	DaemonInfo
	Uptime   Duration `json:"uptime"`
	Revision uint64   `json:"revision"`
	Services struct {
		Total int `json:"total"`
		TCP   int `json:"tcp"`
		UDP   int `json:"udp"`
	} `json:"services"`
	Reals struct {
		Total      int `json:"total"`
		Up         int `json:"up"` // taking new connections
		Down       int `json:"down"`
		Unresolved int `json:"unresolved"`
		Drained    int `json:"drained"`
	} `json:"reals"`
	ConnTables []ConnTable `json:"conn_tables,omitempty"`
	// Node is the node and its BGP speaker.
	Node NodeStatus `json:"node"`
	// Warnings are what needs the operator's attention, one sentence
	// each.
	Warnings []string `json:"warnings"`
}

// Duration is a time.Duration that JSON shows as text ("2h3m4s").
type Duration time.Duration

// String is the duration to the second.
func (d Duration) String() string { return time.Duration(d).Round(time.Second).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// TableWarnAt is the occupancy above which a connection table is warned
// about (the daemon logs it too).
const TableWarnAt = 0.9

func (s *server) getStatus(w http.ResponseWriter, r *http.Request) {
	svcs, err := s.services()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	stats, err := s.b.Stats()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_, rev := s.b.ConfigRevision()
	st := StatusOf(s.b.Daemon(), svcs, stats, time.Now())
	st.Node = s.b.Node()
	st.Warnings = append(st.Warnings, nodeWarnings(&st.Node)...)
	st.Version, st.Revision = s.version, rev
	if info := st.DaemonInfo; info.FileRevision != 0 && rev != info.FileRevision {
		st.Warnings = append(st.Warnings, fmt.Sprintf("the configuration in force (revision %d) has changes made through the API or the CLI "+
			"since %s was read (revision %d): a reload drops them; xlb config export > %s keeps them", rev, info.ConfigPath, info.FileRevision, info.ConfigPath))
	}
	writeJSON(w, http.StatusOK, st)
}

// StatusOf sums up the services and counters of a daemon at now, and
// says what needs attention.
func StatusOf(info DaemonInfo, svcs []Service, stats Stats, now time.Time) Status {
	st := Status{DaemonInfo: info, Uptime: Duration(now.Sub(info.Started)), ConnTables: stats.ConnTables, Warnings: []string{}}
	st.Warnings = append(st.Warnings, info.HostWarnings...)
	for _, svc := range svcs {
		st.Services.Total++
		if svc.Protocol.String() == "tcp" {
			st.Services.TCP++
		} else {
			st.Services.UDP++
		}
		key := svc.Key().String()
		if len(svc.LocalIPs) == 0 {
			st.Warnings = append(st.Warnings, fmt.Sprintf("service %s has no local IP: it forwards nothing until one is added", key))
		}
		taking := 0
		for _, r := range svc.Reals {
			st.Reals.Total++
			ap := fmt.Sprintf("%s of %s", netip.AddrPortFrom(r.Address, r.Port), key)
			switch {
			case r.Health == "down":
				st.Reals.Down++
				st.Warnings = append(st.Warnings, fmt.Sprintf("real %s is down: %s", ap, r.HealthReason))
			case r.NextHop == NextHopUnresolved:
				st.Reals.Unresolved++
				st.Warnings = append(st.Warnings, fmt.Sprintf("real %s is unresolved: %s", ap, r.NextHopReason))
			case r.Weight == 0:
				st.Reals.Drained++
			default:
				st.Reals.Up++
				taking++
			}
		}
		if taking == 0 {
			st.Warnings = append(st.Warnings, fmt.Sprintf("service %s has no real taking new connections: they are dropped (no_real)", key))
		}
	}
	for _, t := range stats.ConnTables {
		if t.Occupancy > TableWarnAt {
			st.Warnings = append(st.Warnings, fmt.Sprintf("the %s connection table is %.0f%% full (%d of %d entries): raise conn_table.%s",
				t.Family, 100*t.Occupancy, t.LiveEntries, t.MaxEntries, t.Family))
		}
	}
	if n := stats.RedirectTxFailed + stats.RedirectErrors; n > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%d frames were lost after a redirect since the start (see xlb doctor and the operator guide, \"The host\")", n))
	}
	return st
}
