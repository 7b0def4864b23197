// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPersistenceAndDrain, with real traffic: a persistent service sends
// every new connection of the client to one real; `xlb real drain` of
// that real moves the client's new connections elsewhere at once, keeps
// its held connection, and returns once that connection has closed.
func TestPersistenceAndDrain(t *testing.T) {
	topo := testTopology(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// closed connections leave the counts after 1 s (tcp_fin)
	cfg := "timeouts: {tcp_fin: 1}\n" + strings.Replace(topo.Config("rr"), "    scheduler: rr\n", "    scheduler: rr\n    persistent: 300\n", 1)
	_, d := startLabWith(t, ctx, topo, cfg)

	seen := answeredBy(t, ctx, topo, 6)
	if len(seen) != 1 {
		t.Fatalf("6 connections of one client reached %v, want one real (persistent)", seen)
	}
	var sticky string
	for r := range seen {
		sticky = r
	}
	n := int(sticky[len("real")] - '0')
	stickyAddr := netip.AddrPortFrom(topo.RealAddr(n), ServicePort)

	held, err := dialKeepAlive(ctx, topo.Client(), netip.AddrPortFrom(topo.VIP(), ServicePort))
	if err != nil {
		t.Fatal(err)
	}
	defer held.conn.Close()
	if body, err := held.getBody("/"); err != nil || parseAnswer("tcp", body).Real != sticky {
		t.Fatalf("held connection: %q, %v; want %s", body, err, sticky)
	}

	drain := exec.CommandContext(ctx, xlbBinary, "real", "drain", "-t", netip.AddrPortFrom(topo.VIP(), ServicePort).String(),
		"-r", stickyAddr.String(), "--interval", "100ms", "--timeout", "20s", "--socket", d.Socket)
	var out lockedBuffer // written by exec's copying goroutine
	drain.Stdout, drain.Stderr = &out, &out
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- drain.Wait() }()

	// the weight is 0 once drain has reported: new connections move
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "1 active") {
		if time.Now().After(deadline) {
			t.Fatalf("drain reported nothing: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if seen := answeredBy(t, ctx, topo, 6); seen[sticky] != 0 || len(seen) != 1 {
		t.Errorf("after the drain began, 6 new connections went to %v: want one other real (the client moved)", seen)
	}
	if body, err := held.getBody("/"); err != nil || parseAnswer("tcp", body).Real != sticky {
		t.Errorf("held connection during the drain: %q, %v; want %s still", body, err, sticky)
	}
	select {
	case err := <-done:
		t.Fatalf("drain ended while a connection was held: %v\n%s", err, out.String())
	case <-time.After(300 * time.Millisecond):
	}
	held.conn.Close()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), fmt.Sprintf("%s drained", stickyAddr)) {
			t.Fatalf("drain: %v\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("drain did not end after the held connection closed:\n%s", out.String())
	}
}

// lockedBuffer is a strings.Builder safe for one writer and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
