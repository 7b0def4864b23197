// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// TestRestartKeepsConnections holds a keep-alive connection through the
// balancer, hands the daemon over (SIGUSR2) and starts a new one on the
// same pinned maps and configuration: the next request on the held connection is
// answered by the same real, which sees the same local IP and port.
func TestRestartKeepsConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 3, "rr")
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)

	held, err := dialKeepAlive(ctx, topo.Client(), vip)
	if err != nil {
		t.Fatal(err)
	}
	defer held.conn.Close()
	before, err := held.getBody("/")
	if err != nil {
		t.Fatal(err)
	}

	// first the same configuration, then one that lists a new real
	// first and the others in reverse: the held connection's real keeps
	// its id in the pinned maps, so it keeps the connection
	reordered := []int{topo.Reals}
	for i := topo.Reals - 1; i >= 1; i-- {
		reordered = append(reordered, i)
	}
	for _, cfg := range []string{topo.Config("rr"), topo.ConfigWith("rr", reordered)} {
		if err := d.HandOver(); err != nil {
			t.Fatalf("hand the daemon over: %v", err)
		}
		if err := topo.WriteConfig(cfg); err != nil {
			t.Fatal(err)
		}
		d2, err := topo.StartDaemon(ctx, xlbBinary)
		if err != nil {
			t.Fatal(err)
		}
		*d = *d2 // the cleanup startLab registered stops the new one

		after, err := held.getBody("/")
		if err != nil {
			t.Fatalf("held connection after the restart: %v (before: %q)", err, before)
		}
		if after != before {
			t.Fatalf("held connection answered %q after the restart, %q before: not the same real and local port", after, before)
		}
	}
	svcs, err := d.Client().Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 3 {
		t.Fatalf("after the restarts the daemon holds %d services, want the 3 of the file: %+v", len(svcs), svcs)
	}
	for _, s := range svcs {
		if len(s.Reals) != topo.Reals {
			t.Fatalf("service %s %s has %d reals after the restarts, want %d", s.Protocol, s.VIP, len(s.Reals), topo.Reals)
		}
	}
	// and the new daemon balances new connections
	for i := 0; i < 2*topo.Reals; i++ {
		k, err := dialKeepAlive(ctx, topo.Client(), vip)
		if err != nil {
			t.Fatal(err)
		}
		_, err = k.getBody("/")
		k.conn.Close()
		if err != nil {
			t.Fatalf("new connection %d after the restart: %v", i, err)
		}
	}
	conns, err := d.Client().Conns(ctx, topo.VIP().String())
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) == 0 {
		t.Fatal("the new daemon lists no connections of the VIP")
	}
}
