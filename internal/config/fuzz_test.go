// SPDX-License-Identifier: Apache-2.0

package config

import (
	"reflect"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/fuzzseed"
)

// FuzzConfig checks the configuration loader on any input: Parse,
// Validate and Desired never panic and agree, and what Parse accepts
// Marshal writes so that Parse reads back the same configuration, which
// validates the same way.
func FuzzConfig(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/*.yaml", "../../examples/*.yaml") {
		f.Add(b)
	}
	for _, s := range fuzzseed.StringLiterals(f, "*_test.go") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		verr := c.Validate()
		d, derr := c.Desired()
		if (verr == nil) != (derr == nil) || (derr == nil) != (d != nil) {
			t.Fatalf("Validate says %v, Desired %v (%v)", verr, derr, d != nil)
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse refuses what Marshal wrote: %v\n%s", err, out)
		}
		if !sameConfig(c, back) {
			t.Fatalf("the configuration changed through Marshal and Parse:\n%#v\n%#v\n%s", c, back, out)
		}
		if verr2 := back.Validate(); (verr == nil) != (verr2 == nil) {
			t.Fatalf("valid before Marshal: %v; after: %v", verr, verr2)
		}
		if !sameConfig(c, c.Clone()) {
			t.Fatalf("Clone changed the configuration")
		}
	})
}

// sameConfig compares configurations as the file means them: a list
// left out and an empty one are the same.
func sameConfig(a, b *Config) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

// normalized returns a copy of c with every empty list nil.
func normalized(c *Config) *Config {
	n := c.Clone()
	n.Interfaces = nilIfEmpty(n.Interfaces)
	if n.Workers != nil {
		n.Workers.CPUs = nilIfEmpty(n.Workers.CPUs)
	}
	if len(n.Services) == 0 {
		n.Services = nil
	}
	if n.Node != nil {
		n.Node.LocalIPs = nilIfEmpty(n.Node.LocalIPs)
		if b := n.Node.BGP; b != nil {
			b.Communities = nilIfEmpty(b.Communities)
			if len(b.Peers) == 0 {
				b.Peers = nil
			}
		}
	}
	if n.Cluster != nil {
		if len(n.Cluster.Nodes) == 0 {
			n.Cluster.Nodes = nil
		}
		for i := range n.Cluster.Nodes {
			n.Cluster.Nodes[i].LocalIPs = nilIfEmpty(n.Cluster.Nodes[i].LocalIPs)
		}
	}
	for i := range n.Services {
		s := &n.Services[i]
		s.LocalIPs = nilIfEmpty(s.LocalIPs)
		s.BGPCommunities = nilIfEmpty(s.BGPCommunities)
		if len(s.Reals) == 0 {
			s.Reals = nil
		}
	}
	return n
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// FuzzSplitCommand checks the words of exec checks: SplitCommand never
// panics, and QuoteCommand writes any words it returns so that they
// split back the same.
func FuzzSplitCommand(f *testing.F) {
	for _, tc := range splitCases {
		f.Add(tc.have)
	}
	for _, s := range fuzzseed.StringLiterals(f, "command_test.go", "validate_exec_test.go") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		words, err := SplitCommand(cmd)
		if err != nil {
			return
		}
		if len(words) == 0 || words[0] == "" {
			t.Fatalf("SplitCommand(%q) = %q: no program", cmd, words)
		}
		quoted := QuoteCommand(words)
		back, err := SplitCommand(quoted)
		if err != nil || !slices.Equal(back, words) {
			t.Fatalf("SplitCommand(%q) = %q; QuoteCommand gives %q, which splits into %q, %v", cmd, words, quoted, back, err)
		}
	})
}
