// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"io"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// Options are a run's parameters; zero fields take the defaults.
type Options struct {
	DUTs []string `json:"duts"`
	// Workers are worker CPU counts: each DUT that can runs once per
	// count, 0 on the receiving CPU, N as NAME-wN (WorkerDUT)
	Workers       []int         `json:"workers,omitempty"`
	Duration      time.Duration `json:"trial_duration_ns"`
	Sizes         []int         `json:"frame_sizes"`
	Flows         []int         `json:"flows"`
	Variations    []string      `json:"variations,omitempty"`
	L4            traffic.L4    `json:"l4"`
	IPv6          bool          `json:"ipv6"`
	FixedRate     float64       `json:"fixed_rate_pps"`     // frame-sizes: the fixed offered rate
	LossTolerance float64       `json:"loss_tolerance_pct"` // PDR
	Precision     float64       `json:"precision"`
	MaxIterations int           `json:"max_iterations"`
	Repeat        int           `json:"repeat,omitempty"`   // datapath: BPF_PROG_RUN runs per figure
	Services      []int         `json:"services,omitempty"` // apply: service counts
	Nodes         []int         `json:"nodes,omitempty"`    // cluster: node counts
	Streams       int           `json:"streams,omitempty"`  // cluster: concurrent streams
	Cores         []int         `json:"cores,omitempty"`    // cps: sender core counts
	Conns         []int         `json:"conns,omitempty"`    // cc: concurrent connections held
	Keepalive     time.Duration `json:"keepalive_ns,omitempty"`
	OpenRate      float64       `json:"open_rate_cps,omitempty"` // cc: how fast connections are opened
	PayloadSize   int           `json:"payload_size,omitempty"`  // XDP endpoints: request and response bytes
	// PayloadSizes sweep the request and response size, a search or
	// test each (WARP17's charts): cps's XDP endpoints, http's bodies
	// with a connection per request
	PayloadSizes []int `json:"payload_sizes,omitempty"`
	ConnTable    int   `json:"conn_table,omitempty"` // the xlb DUT's IPv4 connection table (0: the scenario's)
	// BestOf searches each rfc2544 and multiflow cell this many times,
	// the best counting (VSPERF's N; 0 or 1: once)
	BestOf int `json:"best_of,omitempty"`
	// VerifyDuration is the final verification trial's length at each
	// search's rate (VSPERF's long trial; 0: none)
	VerifyDuration time.Duration `json:"verify_duration_ns,omitempty"`
	// OneWay sends the multi-flow matrix one way only: the client's
	// frames to the reals, no answers (frames.BothWays)
	OneWay bool `json:"one_way,omitempty"`
	// Profile records perf over every CPU for one unpaced trial per DUT
	// and draws it as a flame graph (frame scenarios)
	Profile bool `json:"profile,omitempty"`
	// RedisTests are redis-benchmark's tests (-t), by default the ten
	// of the Arion report
	RedisTests []string `json:"redis_tests,omitempty"`
	CPUs       []int    `json:"cpus"`
	Reals      int      `json:"reals"`
	LabName    string   `json:"lab_name"`
	LabNet     uint8    `json:"lab_net"`
	Self       string   `json:"-"` // the xlb binary (for the xlb DUT)
	// AllowUnclean runs a binary built with changes not committed, or
	// outside a checkout; every report then says so first.
	AllowUnclean bool      `json:"allow_unclean,omitempty"`
	Progress     io.Writer `json:"-"` // nil: quiet
	JSONProgress bool      `json:"-"`
}
