// SPDX-License-Identifier: Apache-2.0

package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// HealthCheck is how a service's reals are checked. A real that fails
// Fall checks in a row is taken out of new-connection scheduling; it
// comes back after Rise successes in a row. Checks run from the
// balancer, from the service's first local IP.
type HealthCheck struct {
	// Type is tcp (connect), http or https (GET, expected status and
	// optional body), udp (send, expect a reply) or exec (a command).
	Type string `yaml:"type" json:"type"`
	// Interval is the time between two checks of a real (default 5s).
	Interval Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	// Timeout bounds one check (default 2s, at most Interval).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Rise is the successes in a row that bring a failed real back
	// (default 2).
	Rise int `yaml:"rise,omitempty" json:"rise,omitempty"`
	// Fall is the failures in a row that take a real out (default 3).
	Fall int `yaml:"fall,omitempty" json:"fall,omitempty"`
	// Port is the port checked; 0 = the real's port.
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// Path is the HTTP path (default "/").
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Host is the HTTP Host header (default: the real's address).
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// ExpectStatus is the HTTP status a healthy real answers (default 200).
	ExpectStatus int `yaml:"expect_status,omitempty" json:"expect_status,omitempty"`
	// ExpectBody, when set, must occur in the HTTP response body.
	ExpectBody string `yaml:"expect_body,omitempty" json:"expect_body,omitempty"`
	// Send is the UDP datagram sent (default "xlb-health-check").
	Send string `yaml:"send,omitempty" json:"send,omitempty"`
	// Expect, when set, must occur in the UDP reply; unset, any reply
	// counts.
	Expect string `yaml:"expect,omitempty" json:"expect,omitempty"`
	// Command is what an exec check runs; exit status 0 is healthy.
	// Without Shell it is split into words (see SplitCommand) and run
	// directly, nothing expanded; with Shell, /bin/sh -c runs it. Its
	// environment holds PATH, HOME, USER, LOGNAME, XLB_REAL_ADDR,
	// XLB_REAL_PORT, XLB_VIP, XLB_VPORT, XLB_PROTOCOL and XLB_LOCAL_IP.
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	// Shell runs Command with /bin/sh -c, for pipes, variables and the
	// like (default false).
	Shell bool `yaml:"shell,omitempty" json:"shell,omitempty"`
	// User runs Command: a user name or numeric id of this host; default
	// exec_checks.user (nobody unless set). root runs it with all of the
	// daemon's privileges: say so only for a command that needs them.
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// Group is Command's primary group; default the user's own (or
	// exec_checks.group when the user is exec_checks.user).
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// OnFail is what happens to a failed real's connections: keep (the
	// default: they continue) or reset (they are removed from the
	// connection table).
	OnFail string `yaml:"on_fail,omitempty" json:"on_fail,omitempty"`
}

// Health check defaults.
const (
	DefaultCheckInterval = 5 * time.Second
	DefaultCheckTimeout  = 2 * time.Second
	DefaultCheckRise     = 2
	DefaultCheckFall     = 3
)

// HealthCheckTypes are the kinds of health check.
var HealthCheckTypes = []string{"tcp", "http", "https", "udp", "exec"}

// WithDefaults returns the check with every unset field at its default.
func (h HealthCheck) WithDefaults() HealthCheck {
	if h.Interval == 0 {
		h.Interval = Duration(DefaultCheckInterval)
	}
	if h.Timeout == 0 {
		h.Timeout = Duration(min(DefaultCheckTimeout, time.Duration(h.Interval)))
	}
	if h.Rise == 0 {
		h.Rise = DefaultCheckRise
	}
	if h.Fall == 0 {
		h.Fall = DefaultCheckFall
	}
	if h.Path == "" && (h.Type == "http" || h.Type == "https") {
		h.Path = "/"
	}
	if h.ExpectStatus == 0 && (h.Type == "http" || h.Type == "https") {
		h.ExpectStatus = 200
	}
	if h.Send == "" && h.Type == "udp" {
		h.Send = "xlb-health-check"
	}
	if h.OnFail == "" {
		h.OnFail = "keep"
	}
	return h
}

// Duration is a time in a configuration: a Go duration string ("1.5s",
// "500ms") or a whole number of seconds.
type Duration time.Duration

// String returns the duration as Go writes it ("2s").
func (d Duration) String() string { return time.Duration(d).String() }

// maxDuration is the longest duration ParseDuration reads, far above any
// bound a field sets, and within what time.Duration holds.
const maxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration reads "1.5s", "500ms" or "3" (seconds). It refuses what
// is not a length of time: NaN, infinities, negative durations and those
// above a hundred years (each field then sets its own bounds).
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q is not a duration: want a finite number of seconds", s)
		}
		if math.Abs(n) > maxDuration.Seconds() {
			return 0, fmt.Errorf("%q seconds is longer than any duration xlb takes (%s)", s, maxDuration)
		}
		d = time.Duration(n * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%q is not a duration (write 2s, 500ms or a number of seconds)", s)
	}
	switch {
	case d < 0:
		return 0, fmt.Errorf("%q is negative; a duration is not", s)
	case d > maxDuration:
		return 0, fmt.Errorf("%q is longer than any duration xlb takes (%s)", s, maxDuration)
	}
	return Duration(d), nil
}

// UnmarshalYAML reads a duration string or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 2s", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as a string ("2s").
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes the duration as a string ("2s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a duration such as \"2s\" or a number of seconds")
		}
		s = strconv.FormatFloat(n, 'f', -1, 64)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
