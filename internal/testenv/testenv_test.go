// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want action
	}{
		{"", skip},
		{"1", fail},
		{"0", skip},
		{"true", skip},
		{"yes", skip},
		{" 1", skip},
		{"1 ", skip},
		{"10", skip},
	} {
		if got := decide(tc.env); got != tc.want {
			t.Errorf("decide(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// recorder is a testing.TB that records Skipf and Fatalf instead of
// ending the test; the embedded TB (the real test) answers the rest.
type recorder struct {
	testing.TB
	skipped, failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = append(r.skipped, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		env      string
		set      bool
		wantFail bool
	}{
		{set: false, wantFail: false},
		{env: "", set: true, wantFail: false},
		{env: "0", set: true, wantFail: false},
		{env: "1", set: true, wantFail: true},
	} {
		t.Run(fmt.Sprintf("set=%v,%q", tc.set, tc.env), func(t *testing.T) {
			if tc.set {
				t.Setenv(RequireEnv, tc.env)
			} else {
				t.Setenv(RequireEnv, "") // restored after the test
				os.Unsetenv(RequireEnv)
			}
			r := &recorder{TB: t}
			Unavailable(r, "needs %s", "a thing")
			want, other := r.skipped, r.failed
			if tc.wantFail {
				want, other = r.failed, r.skipped
			}
			if len(want) != 1 || len(other) != 0 {
				t.Fatalf("skipped %q, failed %q; want one %s", r.skipped, r.failed, map[bool]string{true: "failure", false: "skip"}[tc.wantFail])
			}
			if !strings.HasPrefix(want[0], "needs a thing") {
				t.Errorf("message %q does not start with the reason", want[0])
			}
			if got := strings.Contains(want[0], "required by XLB_REQUIRE_PRIVILEGED=1"); got != tc.wantFail {
				t.Errorf("message %q mentions XLB_REQUIRE_PRIVILEGED=1: %v, want %v", want[0], got, tc.wantFail)
			}
		})
	}
}

func TestRequireTool(t *testing.T) {
	t.Setenv(RequireEnv, "1")
	r := &recorder{TB: t}
	RequireTool(r, "xlb-testenv-no-such-tool")
	if len(r.failed) != 1 || len(r.skipped) != 0 {
		t.Fatalf("missing tool: skipped %q, failed %q; want one failure", r.skipped, r.failed)
	}
	if !strings.Contains(r.failed[0], "needs xlb-testenv-no-such-tool") {
		t.Errorf("message %q does not name the tool", r.failed[0])
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r = &recorder{TB: t}
	RequireTool(r, exe) // the test binary itself is an executable
	if len(r.failed)+len(r.skipped) != 0 {
		t.Errorf("present tool %s: skipped %q, failed %q; want neither", exe, r.skipped, r.failed)
	}
}

func TestRequireRoot(t *testing.T) {
	t.Setenv(RequireEnv, "1")
	r := &recorder{TB: t}
	RequireRoot(r, "testing")
	root := os.Geteuid() == 0
	if got := len(r.failed) == 1; got != !root || len(r.skipped) != 0 {
		t.Fatalf("euid %d: skipped %q, failed %q", os.Geteuid(), r.skipped, r.failed)
	}
	if !root && !strings.HasPrefix(r.failed[0], "needs root: testing") {
		t.Errorf("message %q does not say root is needed and why", r.failed[0])
	}
}
