// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the environment variable that turns the skips of this
// package into failures when it is "1".
const RequireEnv = "XLB_REQUIRE_PRIVILEGED"

// action is what Unavailable does to the test.
type action int

const (
	skip action = iota // t.Skipf: the environment is optional here
	fail               // t.Fatalf: the test was required to run
)

// decide returns the action for the value of RequireEnv: fail only for
// exactly "1", skip for anything else (unset included).
func decide(env string) action {
	if env == "1" {
		return fail
	}
	return skip
}

// Unavailable ends the test because something it needs is not there,
// described by format and args: it fails the test when
// XLB_REQUIRE_PRIVILEGED=1 and skips it otherwise.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	switch decide(os.Getenv(RequireEnv)) {
	case fail:
		t.Fatalf("%s; the test was required by %s=1", msg, RequireEnv)
	default:
		t.Skipf("%s", msg)
	}
}

// RequireRoot ends the test through Unavailable unless it runs as root;
// why says what the test needs root for.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root: %s", why)
	}
}

// RequireTool ends the test through Unavailable unless name is found by
// exec.LookPath (a command on PATH, or a path to an executable).
func RequireTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Unavailable(t, "needs %s (scripts/deps.sh installs it): %v", name, err)
	}
}
