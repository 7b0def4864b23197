// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// xlbBinary is the xlb binary TestMain builds: the tests run it as the
// daemon and as the reals' servers, as `xlb lab demo` does.
var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLB(m, &xlbBinary)) }

// testTopology names a lab after this process, on a net of its own, so
// tests never meet a lab someone else built; it is removed at the end
// even when the test fails.
func testTopology(t *testing.T, reals int) Topology {
	t.Helper()
	testenv.RequireRoot(t, "builds network namespaces and loads XDP")
	for _, tool := range []string{"ip", "ethtool", "nsenter"} {
		testenv.RequireTool(t, tool)
	}
	topo := Topology{Name: fmt.Sprintf("xlbt%d", os.Getpid()), Net: uint8(150 + os.Getpid()%50), Reals: reals}
	t.Cleanup(func() {
		if err := topo.Down(); err != nil {
			t.Errorf("remove lab: %v", err)
		}
		all := topo
		all.Bridge = true // its switch namespace too, if a test made it bridged
		for _, ns := range all.Namespaces() {
			if exec.Command("ip", "netns", "pids", ns).Run() == nil {
				t.Errorf("namespace %s left behind", ns)
			}
		}
	})
	return topo
}

// startLab brings a lab up with its servers and the daemon balancing the
// lab's services with scheduler.
func startLab(t *testing.T, ctx context.Context, reals int, scheduler string) (Topology, *Daemon) {
	t.Helper()
	topo := testTopology(t, reals)
	_, d := startLabWith(t, ctx, topo, topo.Config(scheduler))
	return topo, d
}

// startLabWith brings topo up with its servers and the daemon running
// config (with the daemon's extra flags), and returns the servers (a
// test may stop one) and the daemon.
func startLabWith(t *testing.T, ctx context.Context, topo Topology, config string, extra ...string) (Servers, *Daemon) {
	t.Helper()
	if err := topo.Up(); err != nil {
		t.Fatal(err)
	}
	srvs, err := topo.StartServers(XLBServe(xlbBinary), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srvs.Stop() })
	if err := topo.WriteConfig(config); err != nil {
		t.Fatal(err)
	}
	d, err := topo.StartDaemon(ctx, xlbBinary, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stop daemon: %v", err)
		}
	})
	if err := waitServers(ctx, topo); err != nil {
		t.Fatal(err)
	}
	return srvs, d
}

// TestDemoBalancesRealTraffic runs the demo: the daemon in the lab's
// balancer, real TCP (IPv4 and IPv6) and UDP through its XDP program:
// every real answers, each sees the local IP (FullNAT), rr spreads.
func TestDemoBalancesRealTraffic(t *testing.T) {
	topo := testTopology(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answers, err := Demo(ctx, io.Discard, DemoOptions{Topology: topo, Requests: 9, Self: xlbBinary})
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 27 {
		t.Fatalf("%d answers, want 9 tcp, 9 tcp6 and 9 udp", len(answers))
	}
	seen := map[string]map[string]int{"tcp": {}, "tcp6": {}, "udp": {}}
	for _, a := range answers {
		want := topo.LocalIP()
		if a.Proto == "tcp6" {
			want = topo.LocalIP6()
		}
		if peer, err := netip.ParseAddrPort(a.Peer); err != nil || peer.Addr() != want {
			t.Errorf("%s answer from %s saw peer %s, want the local IP %s", a.Proto, a.Real, a.Peer, want)
		}
		seen[a.Proto][a.Real]++
	}
	for proto, reals := range seen {
		if len(reals) != topo.Reals {
			t.Errorf("%s reached reals %v, want all %d", proto, reals, topo.Reals)
		}
	}
}
