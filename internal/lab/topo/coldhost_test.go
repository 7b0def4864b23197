// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// withUDP6 adds to a lab configuration a UDP service on the IPv6 VIP over
// every real (Config has TCP and UDP on IPv4, TCP only on IPv6).
func withUDP6(t Topology, config string) string {
	var b strings.Builder
	b.WriteString(config)
	fmt.Fprintf(&b, "  - vip: %s\n    port: %d\n    protocol: udp\n    scheduler: rr\n    local_ips: [%s]\n    reals:\n",
		t.VIP6(), ServicePort, t.LocalIP6())
	for i := 1; i <= t.Reals; i++ {
		fmt.Fprintf(&b, "      - {address: %q, port: %d, weight: 1}\n", t.RealAddr6(i), ServicePort)
	}
	return b.String()
}

// udpAskRetry is udpAsk as a UDP application does it: a datagram lost on
// the way is sent again, at most tries times; it returns the attempts.
func udpAskRetry(addr, msg string, tries int) (string, int, error) {
	var err error
	for n := 1; n <= tries; n++ {
		var conn net.Conn
		if conn, err = net.DialTimeout("udp", addr, time.Second); err != nil {
			return "", n, err
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 2048)
		if _, err = conn.Write([]byte(msg)); err == nil {
			var k int
			if k, err = conn.Read(buf); err == nil {
				conn.Close()
				return string(buf[:k]), n, nil
			}
		}
		conn.Close()
	}
	return "", tries, err
}

// coldConnections opens one TCP connection to each VIP and sends one UDP
// request to each from the client; every one must be answered by a real
// that saw the local IP. TCP retransmits its SYN by itself (a dial has 10
// s: retransmissions at 1, 3 and 7 s); UDP requests are retried by the
// application, at most 3 times, a second apart.
func coldConnections(t *testing.T, ctx context.Context, topo Topology, when string) {
	t.Helper()
	err := netns.Run(topo.Client(), func() error {
		for _, v := range []struct{ vip, laddr netip.Addr }{{topo.VIP(), topo.LocalIP()}, {topo.VIP6(), topo.LocalIP6()}} {
			addr := netip.AddrPortFrom(v.vip, ServicePort).String()
			start := time.Now()
			body, err := httpGetWithin(ctx, addr, 10*time.Second)
			if err != nil {
				return fmt.Errorf("%s: tcp to %s: %w", when, addr, err)
			}
			if peer, err := netip.ParseAddrPort(parseAnswer("tcp", body).Peer); err != nil || peer.Addr() != v.laddr {
				return fmt.Errorf("%s: tcp to %s: answer %q, want one seen from the local IP %s", when, addr, body, v.laddr)
			}
			t.Logf("%s: tcp to %s answered in %v", when, addr, time.Since(start).Round(time.Millisecond))
			reply, tries, err := udpAskRetry(addr, "cold", 3)
			if err != nil {
				return fmt.Errorf("%s: udp to %s, %d tries: %w", when, addr, tries, err)
			}
			t.Logf("%s: udp to %s answered after %d tries: %q", when, addr, tries, reply)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestColdHost is the lab a new user builds by hand: the reals behind a
// bridge, Linux defaults everywhere (checksum offload on, neighbour
// tables as they come), no health checks, the balancer never having
// talked to a real. The first TCP and UDP requests over IPv4 and IPv6
// succeed. After `ip neigh flush all` on the balancer, new requests
// succeed again (the next hops the data path misses are resolved on
// demand), and a second after another flush no client packet is dropped
// for want of a real's neighbour: the daemon has put back every real's
// next hop.
func TestColdHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := testTopology(t, 3)
	topo.Bridge = true
	_, d := startLabWith(t, ctx, topo, withUDP6(topo, topo.Config("rr")))
	flush := func() {
		t.Helper()
		if out, err := exec.Command("ip", "-n", topo.LB(), "neigh", "flush", "all").CombinedOutput(); err != nil {
			t.Fatalf("ip neigh flush all: %v: %s", err, out)
		}
	}

	coldConnections(t, ctx, topo, "cold host")
	out, err := exec.Command("ip", "-n", topo.LB(), "-d", "neigh", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip neigh show: %v: %s", err, out)
	}
	for i := 1; i <= topo.Reals; i++ {
		for _, a := range []netip.Addr{topo.RealAddr(i), topo.RealAddr6(i)} {
			if !strings.Contains(string(out), a.String()+" dev l1") {
				t.Errorf("no neighbour entry for real %d (%s) on the balancer:\n%s", i, a, out)
			}
		}
	}

	// past the data path's next-hop cache (1 s): every miss is real
	flush()
	time.Sleep(1200 * time.Millisecond)
	coldConnections(t, ctx, topo, "after ip neigh flush")

	// A second after another flush, the daemon has put back every next
	// hop it keeps: the reals'. A client's hop the kernel had learnt by
	// itself (from the client's ARP) is known to xlb only from a drop: a
	// reply to that client may be dropped once as no_neigh, which asks
	// for it (the client's retransmission goes through). The drop
	// recorder tells the two apart.
	flush()
	time.Sleep(1200 * time.Millisecond)
	followCtx, stopFollow := context.WithCancel(ctx)
	followed := make(chan []api.Drop, 1)
	go func() {
		var drops []api.Drop
		_ = d.Client().FollowDrops(followCtx, url.Values{"reason": {"no_neigh"}}, func(dr api.Drop) bool {
			drops = append(drops, dr)
			return true
		})
		followed <- drops
	}()
	time.Sleep(300 * time.Millisecond) // the recorder is on
	coldConnections(t, ctx, topo, "a second after another flush")
	time.Sleep(300 * time.Millisecond)
	stopFollow()
	for _, dr := range <-followed {
		if dr.Src.Addr() == topo.ClientAddr() || dr.Src.Addr() == topo.ClientAddr6() {
			t.Errorf("a second after the flush, a client's packet was dropped for want of a real's neighbour: %+v", dr)
		} else {
			t.Logf("a reply dropped once for want of the client's neighbour, which it asks for: %s -> %s", dr.Src, dr.Dst)
		}
	}

	st, err := d.Client().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drops %v, verdicts %v, redirect errors %d", nonZero(st.Drops), nonZero(st.Verdicts), st.RedirectErrors)
	if st.RedirectErrors != 0 || st.RedirectTxFailed != 0 {
		t.Errorf("redirected frames lost: %d errors, %d tx failures", st.RedirectErrors, st.RedirectTxFailed)
	}
}
