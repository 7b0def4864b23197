// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/fuzzseed"
)

// FuzzParse checks the ipvsadm argument parser on any arguments (one a
// line of the input): it never panics and refuses with usage errors
// only; a command it accepts makes its request, and a change it accepts
// applies to a configuration, without panicking; the configuration then
// validates or is refused, and survives Marshal. The same input, read as
// an -R file, is restored the same way.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzseed.StringLiterals(f, "*_test.go") {
		f.Add(strings.Join(strings.Fields(s), "\n"))
		if strings.Contains(s, "\n") {
			f.Add(s) // an -R input as it is
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(in, "\n")
		c, err := Parse(args)
		if err != nil {
			if !IsUsage(err) {
				t.Fatalf("Parse(%q): %v is not a usage error", args, err)
			}
		} else {
			_, _ = c.Request()
			applied(t, func(cfg *config.Config) error { return c.ApplyTo(cfg) })
		}
		lines, err := ParseRestore(strings.NewReader(in))
		if err != nil {
			if !IsUsage(err) && !strings.HasPrefix(err.Error(), "read rules: ") {
				t.Fatalf("ParseRestore(%q): %v is not a usage error", in, err)
			}
			return
		}
		applied(t, func(cfg *config.Config) error { return RestoreTo(cfg, lines) })
	})
}

// fuzzBase is the configuration fuzzed commands change.
const fuzzBase = `interfaces: [eth0]
services:
  - {vip: 10.0.0.1, port: 80, protocol: tcp, scheduler: rr, local_ips: [10.0.0.254], reals: [{address: 10.0.1.1, port: 80}]}
  - {vip: "2001:db8::1", port: 53, protocol: udp, local_ips: ["2001:db8::fe"], reals: [{address: "2001:db8::2", port: 53, weight: 0}]}
`

// applied makes a change to a copy of fuzzBase and checks that what it
// leaves validates (or is refused) and marshals.
func applied(t *testing.T, change func(*config.Config) error) {
	t.Helper()
	cfg, err := config.Parse([]byte(fuzzBase))
	if err != nil {
		t.Fatal(err)
	}
	if err := change(cfg); err != nil {
		return
	}
	_ = cfg.Validate()
	out, err := config.Marshal(cfg)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if _, err := config.Parse(out); err != nil {
		t.Fatalf("the changed configuration does not parse back: %v\n%s", err, out)
	}
}
