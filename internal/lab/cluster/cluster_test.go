// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// xlbBinary is the xlb binary TestMain builds: the nodes' daemons and
// the reals' servers.
var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLB(m, &xlbBinary)) }

// testCluster names a cluster after this process and the test, on a net
// of its own, and removes it at the end even when the test fails.
func testCluster(t *testing.T, nodes, reals int) Cluster {
	t.Helper()
	testenv.RequireRoot(t, "builds network namespaces, runs FRR and loads XDP")
	for _, tool := range []string{"ip", "ethtool", "nsenter", "vtysh", "/usr/lib/frr/bgpd", "/usr/lib/frr/zebra"} {
		testenv.RequireTool(t, tool)
	}
	c := New(fmt.Sprintf("xc%d", os.Getpid()%100000), uint8(200+os.Getpid()%50), nodes, reals)
	t.Cleanup(func() {
		if err := c.Down(); err != nil {
			t.Errorf("remove lab: %v", err)
		}
		for _, ns := range c.Namespaces() {
			if exec.Command("ip", "netns", "pids", ns).Run() == nil {
				t.Errorf("namespace %s left behind", ns)
			}
		}
	})
	return c
}

// startCluster brings c up with its servers (returned: a test may stop
// one) and a daemon on every node with o, stopped at the end.
func startCluster(t *testing.T, ctx context.Context, c Cluster, o NodeOptions) (topo.Servers, []*topo.Daemon) {
	t.Helper()
	srvs := upWithServers(t, ctx, c)
	ds, err := c.StartNodes(ctx, xlbBinary, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i, d := range ds {
			if err := d.Stop(); err != nil {
				t.Errorf("stop node%d: %v", i+1, err)
			}
		}
	})
	return srvs, ds
}

// upWithServers brings c up with the reals' servers (stopped at the end),
// no daemon yet.
func upWithServers(t *testing.T, ctx context.Context, c Cluster) topo.Servers {
	t.Helper()
	if err := c.Up(); err != nil {
		t.Fatal(err)
	}
	srvs, err := c.StartServers(topo.XLBServe(xlbBinary), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srvs.Stop)
	if err := c.WaitServers(ctx); err != nil {
		t.Fatal(err)
	}
	return srvs
}

// TestClusterSpreadsOverNodes: the router spreads the VIP over the three
// nodes that announce it; new connections reach every node and every
// real, each through the node whose local IP the real sees.
func TestClusterSpreadsOverNodes(t *testing.T) {
	c := testCluster(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, ds := startCluster(t, ctx, c, NodeOptions{})
	if err := c.AwaitVIP(c.AllNodes(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	answers, err := c.Requests(ctx, io.Discard, 60)
	if err != nil {
		t.Fatal(err)
	}
	perNode, perReal := map[string]map[int]int{"tcp": {}, "udp": {}}, map[string]int{}
	for _, a := range answers {
		if a.Node == 0 {
			t.Errorf("%s answer %+v: the real saw no node's local IP", a.Proto, a.Answer)
		}
		perNode[a.Proto][a.Node]++
		perReal[a.Real]++
	}
	// 60 flows over 3 nodes: fewer than 8 on one happens with a
	// probability below 1e-3 when the hash spreads evenly
	for proto, m := range perNode {
		for i := 1; i <= c.Nodes; i++ {
			if m[i] < 8 {
				t.Errorf("%s: node%d carried %d of 60 new flows (%v): the router does not spread them", proto, i, m[i], m)
			}
		}
	}
	if len(perReal) != c.Reals {
		t.Errorf("reals reached: %v, want all %d", perReal, c.Reals)
	}
	t.Logf("per node: %v; per real: %v", perNode, perReal)
	for i, d := range ds {
		n, err := d.Client().Node(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.BGP == nil || len(n.BGP.Peers) != 1 || n.BGP.Peers[0].State != "established" || !n.BGP.Peers[0].GracefulRestart {
			t.Errorf("node%d: peers %+v", i+1, n.BGP)
		}
	}
}

// nodeRoute returns node d's decision for prefix.
func nodeRoute(t *testing.T, ctx context.Context, d *topo.Daemon, prefix netip.Prefix) api.RouteStatus {
	t.Helper()
	n, err := d.Client().Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.BGP != nil {
		for _, r := range n.BGP.Routes {
			if r.Prefix == prefix {
				return r
			}
		}
	}
	t.Fatalf("node %s has no route %s: %+v", n.Name, prefix, n.BGP)
	return api.RouteStatus{}
}

// announces reports whether node d says it announces prefix.
func announces(ctx context.Context, d *topo.Daemon, prefix netip.Prefix) bool {
	n, err := d.Client().Node(ctx)
	if err != nil || n.BGP == nil {
		return false
	}
	i := slices.IndexFunc(n.BGP.Routes, func(r api.RouteStatus) bool { return r.Prefix == prefix })
	return i >= 0 && n.BGP.Routes[i].Announced
}

// TestClusterAnnounceWithdraw follows the VIP at the router through a
// drain, a health failure of the only real, a hand-over and a stop.
func TestClusterAnnounceWithdraw(t *testing.T) {
	c := testCluster(t, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srvs, ds := startCluster(t, ctx, c, NodeOptions{HealthCheck: true, ShutdownGrace: 1})
	vip := netip.PrefixFrom(c.VIP(), 32)
	await := func(what string, nodes ...int) {
		t.Helper()
		if err := c.AwaitVIP(nodes, 15*time.Second); err != nil {
			t.Fatalf("%s: %v\nnode1:\n%s\nnode2:\n%s", what, err, ds[0].Log(), ds[1].Log())
		}
	}
	await("start", 1, 2)

	// drain: node1's VIP goes, its local IP stays
	if _, err := ds[0].Client().Drain(ctx, true); err != nil {
		t.Fatal(err)
	}
	await("node1 drained", 2)
	if r := nodeRoute(t, ctx, ds[0], vip); r.Announced || r.Reason != api.WithdrawnDrained {
		t.Errorf("node1 drained: VIP %+v", r)
	}
	if hops, err := c.NextHops(netip.PrefixFrom(c.NodeLocalIP(1), 32)); err != nil || !slices.Equal(hops, c.NodeAddrs(1)) {
		t.Errorf("node1 drained: its local IP goes via %v (%v), want node1", hops, err)
	}
	if _, err := ds[0].Client().Drain(ctx, false); err != nil {
		t.Fatal(err)
	}
	await("node1 resumed", 1, 2)

	// the only real fails its health check: no node announces the VIP
	_ = srvs[0].Process.Kill()
	_ = srvs[0].Wait()
	await("real1 down")
	if r := nodeRoute(t, ctx, ds[1], vip); r.Announced || r.Reason != api.WithdrawnNoReal {
		t.Errorf("real1 down: node2's VIP %+v", r)
	}
	srv := c.Exec(c.Real(1), xlbBinary, "lab", "serve", "--name", "real1", "--listen", fmt.Sprintf(":%d", topo.ServicePort))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	srvs[0] = srv
	await("real1 up again", 1, 2)

	// a hand-over: the router keeps node1's routes throughout (graceful
	// restart) while the next daemon starts and announces them again
	stop := make(chan struct{})
	lost := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(lost)
				return
			case <-time.After(20 * time.Millisecond):
			}
			if hops, err := c.NextHops(vip); err == nil && !slices.Contains(hops, c.NodeAddr(1)) {
				lost <- fmt.Sprintf("VIP via %v", hops)
				<-stop
				close(lost)
				return
			}
		}
	}()
	if err := ds[0].HandOver(); err != nil {
		t.Fatal(err)
	}
	d, err := c.StartNode(ctx, xlbBinary, 1)
	if err != nil {
		t.Fatal(err)
	}
	ds[0] = d
	deadline := time.Now().Add(15 * time.Second)
	for !announces(ctx, d, vip) {
		if time.Now().After(deadline) {
			t.Fatalf("the next daemon did not announce the VIP:\n%s", d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the router replaces the stale routes meanwhile
	close(stop)
	if msg, ok := <-lost; ok {
		t.Errorf("during the hand-over the router lost node1: %s", msg)
	}
	await("after the hand-over", 1, 2)

	// a drain outlives a hand-over
	if _, err := ds[0].Client().Drain(ctx, true); err != nil {
		t.Fatal(err)
	}
	await("node1 drained", 2)
	if err := ds[0].HandOver(); err != nil {
		t.Fatal(err)
	}
	if ds[0], err = c.StartNode(ctx, xlbBinary, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the next daemon would have announced the VIP by now
	if n, err := ds[0].Client().Node(ctx); err != nil || !n.Drained {
		t.Errorf("after a hand-over the drain is gone: %+v %v", n, err)
	}
	await("still drained after the hand-over", 2)
	if _, err := ds[0].Client().Drain(ctx, false); err != nil {
		t.Fatal(err)
	}
	await("node1 resumed", 1, 2)

	// a stop withdraws the VIP, then (after the grace) the local IP,
	// which node1 announces as a backup
	laddr2 := netip.PrefixFrom(c.NodeLocalIP(2), 32)
	if hops, err := c.NextHops(laddr2); err != nil || !slices.Equal(hops, c.NodeAddrs(2)) {
		t.Errorf("node2's local IP goes via %v (%v), want node2 (node1's backup route is longer)", hops, err)
	}
	if err := ds[1].Stop(); err != nil {
		t.Fatal(err)
	}
	await("node2 stopped", 1)
	if hops, err := c.AwaitNextHops(laddr2, c.NodeAddrs(1), 10*time.Second); err != nil {
		t.Errorf("node2 stopped: its local IP goes via %v, want node1's backup: %v", hops, err)
	}
	if !strings.Contains(ds[1].Log(), "VIPs withdrawn; forwarding for the shutdown grace") {
		t.Errorf("node2 did not log its shutdown grace:\n%s", ds[1].Log())
	}
}
