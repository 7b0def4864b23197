// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// heldConns is how many established connections the node changes test
// holds through every change.
const heldConns = 60

// TestClusterNodeChanges holds established connections through a node
// added, a node drained and a node killed: ECMP moves flows between
// nodes at each change, and connection sync keeps them (goal: none
// broken). After the kill, new connections fail until the router's hold
// time has passed; the test reports how long that took.
func TestClusterNodeChanges(t *testing.T) {
	testenv.RequireTool(t, "nft")
	c := testCluster(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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
	ds := make([]*topo.Daemon, c.Nodes+1) // by node number
	t.Cleanup(func() {
		for i, d := range ds {
			if d != nil {
				if err := d.Stop(); err != nil {
					t.Errorf("stop node%d: %v", i, err)
				}
			}
		}
	})
	start := func(i int) {
		t.Helper()
		if ds[i], err = c.startNode(ctx, xlbBinary, i, NodeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	await := func(what string, nodes ...int) {
		t.Helper()
		if err := c.AwaitVIP(nodes, 20*time.Second); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	start(1)
	start(2)
	await("two nodes", 1, 2)
	held, err := c.Hold(ctx, heldConns, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Stop()
	phase := func(name string, settle time.Duration) HeldReport {
		t.Helper()
		time.Sleep(settle)
		r := held.Report(c)
		t.Logf("%s: %d of %d connections broken, %d answers, longest stall %v, owners %v %v",
			name, r.Broken, r.Conns, r.Answers, r.MaxStall.Round(time.Millisecond), r.Nodes, r.Errors)
		return r
	}
	phase("held over node1 and node2", time.Second) // every connection synced

	// add: node3 gets the others' connections, then announces the VIP
	start(3)
	await("node3 added", 1, 2, 3)
	if r := phase("node3 added", 2*time.Second); r.Broken != 0 {
		t.Errorf("adding a node broke %d of %d connections: %v", r.Broken, r.Conns, r.Errors)
	}
	moved := forwarded(t, ctx, ds[3])
	if moved == 0 {
		t.Errorf("no held flow moved to node3 (it forwarded no packet): the test proves nothing")
	}

	// drain: node1's flows move to node2 and node3
	if _, err := ds[1].Client().Drain(ctx, true); err != nil {
		t.Fatal(err)
	}
	await("node1 drained", 2, 3)
	if r := phase("node1 drained", 2*time.Second); r.Broken != 0 {
		t.Errorf("draining a node broke %d of %d connections: %v", r.Broken, r.Conns, r.Errors)
	}

	// kill: node2's machine goes silent (its daemon dies with it, and
	// no FIN of its BGP session reaches the router, which would keep its
	// routes for the graceful restart); the router notices at its hold
	// time and moves node2's flows and local IP
	killed := time.Now()
	if err := c.Silence(2); err != nil {
		t.Fatal(err)
	}
	if err := ds[2].Kill(); err != nil {
		t.Fatal(err)
	}
	ds[2] = nil
	back, failed, err := c.NewConnsBack(ctx, killed, 100*time.Millisecond, 2*routerHold*time.Second+2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node2 killed: new connections failed %d times, the last %v after the kill (router hold time %d s)",
		failed, back.Round(time.Millisecond), routerHold)
	if back > 2*routerHold*time.Second {
		t.Errorf("new connections failed until %v after the kill, more than twice the hold time", back)
	}
	await("node2 killed", 3)
	if r := phase("node2 killed", 2*time.Second); r.Broken != 0 {
		t.Errorf("killing a node broke %d of %d connections (all were synced): %v", r.Broken, r.Conns, r.Errors)
	}
}

// forwarded is how many client packets node d forwarded for the VIP's
// services.
func forwarded(t *testing.T, ctx context.Context, d *topo.Daemon) uint64 {
	t.Helper()
	svcs, err := d.Client().Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, s := range svcs {
		n += s.Stats.InPackets
	}
	return n
}
