// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api/apitest"
)

// TestDrain: drain sets the weight to 0 at once and reports the
// remaining connections until the timeout (the in-memory backend's
// reals always hold one), then fails with errDrainTimeout.
func TestDrain(t *testing.T) {
	b, sock := apitest.Serve(t, testConfig)
	out, err := run("real", "drain", "-t", "192.0.2.10:80", "-r", "198.51.100.1:8080", "--timeout", "60ms", "--interval", "20ms", "--socket", sock)
	if !errors.Is(err, errDrainTimeout) {
		t.Fatalf("error %v, want a drain timeout", err)
	}
	if n := strings.Count(out, "198.51.100.1:8080: 1 active, 0 inactive connections"); n < 2 {
		t.Errorf("%d progress lines, want at least 2:\n%s", n, out)
	}
	if w := b.Config().Services[0].Reals[0].Weight; w == nil || *w != 0 {
		t.Errorf("weight after drain: %v, want 0", w)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such real", []string{"-t", "192.0.2.10:80", "-r", "198.51.100.9:8080"}, "198.51.100.9"},
		{"no real named", []string{"-t", "192.0.2.10:80"}, "give -r"},
		{"bad timeout", []string{"-t", "192.0.2.10:80", "-r", "198.51.100.1:8080", "--timeout", "0s"}, "--timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(append(append([]string{"real", "drain"}, tc.args...), "--socket", sock)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
