// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

func run(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		have      []string
		wantOut   string
		wantUsage bool // the error is a usage error (exit code 2)
	}{
		{name: "version", have: []string{"version"}, wantOut: "xlb "},
		{name: "version json", have: []string{"--json", "version"}, wantOut: `"go_version"`},
		{name: "unknown flag", have: []string{"--bogus"}, wantUsage: true},
		{name: "--version", have: []string{"--version"}, wantOut: "xlb "},
		{name: "daemon exit without --pid", have: []string{"daemon", "exit"}, wantUsage: true},
		{name: "extra argument", have: []string{"version", "now"}, wantUsage: true},
		{name: "check extra argument", have: []string{"datapath", "check", "x"}, wantUsage: true},
		{name: "bench without scenario", have: []string{"bench"}, wantUsage: true},
		{name: "bench unknown scenario", have: []string{"bench", "warp", "--quiet"}, wantUsage: true},
		{name: "bench unknown DUT", have: []string{"bench", "pps", "--dut", "xlb,ipvs", "--quiet"}, wantUsage: true},
		{name: "bench bad frame size", have: []string{"bench", "frame-sizes", "--sizes", "32", "--quiet"}, wantUsage: true},
		{name: "bench all with a scenario's flag", have: []string{"bench", "all", "--sizes", "64", "--quiet"}, wantUsage: true},
		{name: "bench profile of apps", have: []string{"bench", "redis", "--profile", "--quiet"}, wantUsage: true},
		{name: "bench quick without all", have: []string{"bench", "pps", "--quick", "--quiet"}, wantUsage: true},
		{name: "bench unknown redis test", have: []string{"bench", "redis", "--redis-tests", "set,flushall", "--quiet"}, wantUsage: true},
		{name: "bench bad variation", have: []string{"bench", "multiflow", "--variations", "l5-src", "--quiet"}, wantUsage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.have...)
			var ue usageError
			if got := errors.As(err, &ue); got != tc.wantUsage {
				t.Fatalf("usage error = %v (%v), want %v", got, err, tc.wantUsage)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("output %q does not contain %q", out, tc.wantOut)
			}
		})
	}
}

// TestUnknownCommand: a command xlb does not know is a wrong command
// line (exit 2).
func TestUnknownCommand(t *testing.T) {
	_, err := run("frobnicate")
	if err == nil || !isUnknownCommand(err) {
		t.Fatalf("xlb frobnicate: %v, want cobra's unknown command", err)
	}
}

func TestDatapathCheck(t *testing.T) {
	testenv.RequireRoot(t, "loads BPF programs")
	out, err := run("--json", "datapath", "check", "--conns4", "4096")
	if err != nil {
		t.Fatal(err)
	}
	var res checkResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v: %s", err, out)
	}
	// 4096 connections: 13108 slots (16/5 per connection, even), and
	// the probe's 16 past the last
	if !res.Loaded || len(res.ConnTables) != 2 || res.ConnTables[0].Conns != 4096 || res.ConnTables[0].Slots != 13108+16 {
		t.Errorf("got %+v, want a loaded data path with 4096 IPv4 connections in 13124 slots", res)
	}
}
