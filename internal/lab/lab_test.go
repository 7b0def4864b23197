// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The lab test runs this test binary as each real's server.
const serveEnv = "XLB_LAB_TEST_SERVE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(serveEnv); spec != "" {
		name, listen, _ := strings.Cut(spec, ",")
		if err := Serve(context.Background(), name, listen); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testTopology names a lab after this process, on a net of its own, so
// tests never meet a lab someone else built; it is removed at the end
// even when the test fails.
func testTopology(t *testing.T, reals int) Topology {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces and loads XDP")
	}
	for _, tool := range []string{"ip", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/deps.sh installs it)", tool)
		}
	}
	topo := Topology{Name: fmt.Sprintf("xlbt%d", os.Getpid()), Net: uint8(150 + os.Getpid()%50), Reals: reals}
	t.Cleanup(func() {
		if err := topo.Down(); err != nil {
			t.Errorf("remove lab: %v", err)
		}
	})
	return topo
}

// TestDemoBalancesRealTraffic sends real TCP and UDP through the XDP
// program attached in the lab: every real answers, each sees the local
// IP (FullNAT), and rr spreads the requests.
func TestDemoBalancesRealTraffic(t *testing.T) {
	topo := testTopology(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	answers, err := Demo(ctx, io.Discard, DemoOptions{
		Topology: topo, Requests: 9, Self: self,
		ServeArgs: func(name, listen string) []string {
			return []string{"env", serveEnv + "=" + name + "," + listen, self}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 18 {
		t.Fatalf("%d answers, want 9 tcp and 9 udp", len(answers))
	}
	seen := map[string]map[string]int{"tcp": {}, "udp": {}}
	for _, a := range answers {
		if !strings.HasPrefix(a.Peer, topo.LocalIP().String()+":") {
			t.Errorf("%s answer from %s saw peer %s, want the local IP %s", a.Proto, a.Real, a.Peer, topo.LocalIP())
		}
		seen[a.Proto][a.Real]++
	}
	for proto, reals := range seen {
		if len(reals) != topo.Reals {
			t.Errorf("%s reached reals %v, want all %d", proto, reals, topo.Reals)
		}
	}
	for _, ns := range topo.Namespaces() {
		if exec.Command("ip", "netns", "pids", ns).Run() == nil {
			t.Errorf("namespace %s left behind", ns)
		}
	}
}
