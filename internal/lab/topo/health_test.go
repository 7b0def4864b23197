// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// failoverCheck is the health check of the failover test: a real is down
// after fall x interval (plus the last check's timeout) at most.
const failoverCheck = "    health_check: {type: http, path: /, interval: 100ms, timeout: 80ms, rise: 2, fall: 2}\n"

// TestHealthCheckFailover stops a real's server: within fall x interval
// (+ timeout) the daemon reports it down, and no new connection goes to
// it; started again, it comes back after rise checks and gets
// connections again. XLB_FAILOVER_TRIALS repeats the stop/start (up to
// 100 times) and logs the median, least and most failover time.
func TestHealthCheckFailover(t *testing.T) {
	trials := 2
	if s := os.Getenv("XLB_FAILOVER_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			t.Fatalf("XLB_FAILOVER_TRIALS=%q: want 1 to 100", s)
		}
		trials = n
	}
	topo := testTopology(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(30+trials*10)*time.Second)
	defer cancel()
	cfg := strings.Replace(topo.Config("rr"), "    scheduler: rr\n", "    scheduler: rr\n"+failoverCheck, 1)
	srvs, d := startLabWith(t, ctx, topo, cfg)
	victim := netip.AddrPortFrom(topo.RealAddr(2), ServicePort)
	health := func() string {
		svcs, err := d.Client().Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs {
			for _, r := range s.Reals {
				if s.Protocol == loadbalancer.TCP && r.Address == victim.Addr() && r.Port == victim.Port() && r.Health != "" {
					return r.Health
				}
			}
		}
		t.Fatalf("no health for %s in %+v", victim, svcs)
		return ""
	}
	waitHealth := func(want string, limit time.Duration) time.Duration {
		start := time.Now()
		for health() != want {
			if time.Since(start) > limit {
				t.Fatalf("%s not %s after %v:\n%s", victim, want, limit, d.Log())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	requests := func(n int) map[string]int { return answeredBy(t, ctx, topo, n) }
	waitHealth("up", 5*time.Second)

	var failovers []time.Duration
	for trial := 0; trial < trials; trial++ {
		// stop real2's server
		if err := srvs[1].Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = srvs[1].Wait()
		failovers = append(failovers, waitHealth("down", 2*time.Second))
		if seen := requests(12); seen["real2"] != 0 || len(seen) != 2 {
			t.Fatalf("trial %d: with real2 down, 12 new connections went to %v", trial, seen)
		}
		// start it again
		cmd := topo.Exec(topo.Real(2), xlbBinary, "lab", "serve", "--name", "real2", "--listen", fmt.Sprintf(":%d", ServicePort))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		srvs[1] = cmd
		waitHealth("up", 5*time.Second)
		if seen := requests(9); seen["real2"] == 0 {
			t.Fatalf("trial %d: real2 is up again but 9 new connections went to %v", trial, seen)
		}
	}
	slices.Sort(failovers)
	t.Logf("failover (server stopped -> real down, interval 100ms, timeout 80ms, fall 2) over %d trials: median %v, min %v, max %v",
		len(failovers), failovers[len(failovers)/2], failovers[0], failovers[len(failovers)-1])
	if !strings.Contains(d.Log(), "real down") || !strings.Contains(d.Log(), "real up") {
		t.Errorf("the daemon did not log the transitions:\n%s", d.Log())
	}
}

// answeredBy opens n new HTTP connections from the client to the VIP and
// returns how many each real answered.
func answeredBy(t *testing.T, ctx context.Context, topo Topology, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort).String()
	err := netns.Run(topo.Client(), func() error {
		for i := 0; i < n; i++ {
			body, err := httpGet(ctx, vip)
			if err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
			seen[parseAnswer("tcp", body).Real]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}
