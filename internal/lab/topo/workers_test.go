// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestWorkers: with workers the interfaces run the steering program and
// the balancer runs on the worker CPUs; connections reach every real; a
// crash and a start take the data path over with no connection lost and
// no segment retransmitted; an apply that changes the workers is refused.
func TestWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := testTopology(t, 3)
	cpus := []string{"0"}
	if runtime.NumCPU() > 1 {
		cpus = append(cpus, "1")
	}
	workers := fmt.Sprintf("workers: {cpus: [%s]}\n", strings.Join(cpus, ", "))
	_, d := startLabWith(t, ctx, topo, workers+topo.Config("rr"))
	assertSteering := func(when string) {
		t.Helper()
		out, err := topo.Exec(topo.LB(), "ip", "-d", "link", "show", "dev", "l0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "name xlb_steer") {
			t.Fatalf("%s: l0 does not run xlb_steer (%v):\n%s", when, err, out)
		}
	}
	assertSteering("at start")
	if st, err := d.Client().Status(ctx); err != nil || len(st.WorkerCPUs) != len(cpus) {
		t.Errorf("status: worker CPUs %v (%v), want %d", st.WorkerCPUs, err, len(cpus))
	}
	if seen := answeredBy(t, ctx, topo, 9); len(seen) != topo.Reals {
		t.Errorf("9 connections through the workers reached %v, want all %d reals", seen, topo.Reals)
	}

	crashUnderProbe(t, ctx, topo, d, time.Second, "kill -9, then start, with workers")
	assertSteering("after the restart")

	_, err := d.Client().Apply(ctx, []byte("workers: {cpus: [0], queue: 512}\n"+topo.Config("rr")))
	if err == nil || !strings.Contains(err.Error(), "workers: changing the worker CPUs needs a daemon restart") {
		t.Errorf("an apply with other workers: %v, want it refused", err)
	}
}
