// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// testEnv is an nsEnv that reports to a test.
type testEnv struct {
	*nsEnv
	t testing.TB
}

var nsCounter atomic.Int32

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t, "loads BPF programs and creates network namespaces")
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newEnv loads a data path with one CPU's port range and builds the
// namespace; both are removed when the test ends, failed or not.
func newEnv(t testing.TB, opts Options) *testEnv {
	t.Helper()
	requireRoot(t)
	ns, err := newNSEnv(fmt.Sprintf("xlbt-%d-%d", os.Getpid(), nsCounter.Add(1)), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	return &testEnv{nsEnv: ns, t: t}
}

// with returns a view of the environment that reports to t (a subtest).
func (e *testEnv) with(t testing.TB) *testEnv {
	c := *e
	c.t = t
	return &c
}

// run passes one frame through the program with BPF_PROG_RUN and returns
// the verdict and the frame as the program left it.
func (e *testEnv) run(frame []byte) (Verdict, []byte) {
	e.t.Helper()
	v, out, err := e.runOnce(frame)
	if err != nil {
		e.t.Fatalf("BPF_PROG_RUN: %v", err)
	}
	return v, out
}
