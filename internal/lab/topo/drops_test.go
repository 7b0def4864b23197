// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// TestDropsFollow: with every real of the TCP service drained, the
// client's SYNs are dropped as no_real; xlb drops --follow in the
// balancer's namespace prints them with the client's address and the
// VIP, and exits after --count.
func TestDropsFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 2, "rr")
	_, sock, _ := topo.DaemonFiles()
	client := d.Client()
	svcPath := api.ServicePath("tcp", topo.VIP().String(), ServicePort)
	for i := 1; i <= 2; i++ {
		if _, err := client.Change(ctx, http.MethodPut, fmt.Sprintf("%s/reals/%s/%d", svcPath, topo.RealAddr(i), ServicePort), api.Weight(0)); err != nil {
			t.Fatal(err)
		}
	}
	follow := topo.Exec(topo.LB(), xlbBinary, "drops", "--follow", "--reason", "no_real", "--count", "2", "--seconds", "30", "--socket", sock)
	var out strings.Builder
	follow.Stdout, follow.Stderr = &out, &out
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	// SYNs until the follower has its two (each connect retransmits)
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	var exitErr error
	for waiting := true; waiting; {
		_ = netns.Run(topo.Client(), func() error {
			c, err := net.DialTimeout("tcp", vip.String(), 300*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return nil
		})
		select {
		case exitErr = <-done:
			waiting = false
		case <-ctx.Done():
			t.Fatalf("xlb drops --follow did not end: %s", out.String())
		default:
		}
	}
	if exitErr != nil {
		t.Fatalf("xlb drops --follow: %v: %s", exitErr, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := fmt.Sprintf("l0 no_real tcp %s:", topo.ClientAddr())
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, want) || !strings.Contains(l, "-> "+vip.String()) {
			t.Errorf("line %q, want %q ... -> %s", l, want, vip)
		}
	}
}
