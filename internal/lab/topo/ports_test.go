// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// TestPortsPerRealAndReuse holds more connections through one local IP
// than it has local ports, since a port is unique per local IP and real,
// and then, after the connections closed and their short closing
// timeout passed, opens as many again on the same ports: zero errors,
// nothing dropped as no_lport. The client dials from one pinned CPU, so
// that every SYN takes its port from that CPU's slice of the range.
func TestPortsPerRealAndReuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const reals, conns = 4, 24 // 16 ports, 8 on each CPU: 32 per CPU over 4 reals
	topo := testTopology(t, reals)
	cfg := "local_port_range: 2000-2015\ntimeouts: {tcp_fin: 1, tcp_close: 1}\n" + topo.Config("rr")
	_, d := startLabWith(t, ctx, topo, cfg)
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	w, err := netns.StartWorker(topo.Client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	batch := func(round int) {
		t.Helper()
		held := make([]*keepAlive, 0, conns)
		defer func() {
			for _, k := range held {
				k.conn.Close()
			}
		}()
		for i := range conns {
			var conn net.Conn
			w.Do(func() {
				dl := net.Dialer{Timeout: 3 * time.Second}
				conn, err = dl.DialContext(ctx, "tcp", vip.String())
			})
			if err != nil {
				t.Fatalf("round %d, connection %d: %v (drops %v)", round, i, err, drops(ctx, d))
			}
			k := &keepAlive{conn: conn, r: bufio.NewReader(conn)}
			held = append(held, k)
			if body, err := k.getBody("/"); err != nil || body == "" {
				t.Fatalf("round %d, connection %d: %q, %v", round, i, body, err)
			}
		}
	}
	batch(1)
	// closed: each entry goes after tcp_fin and the 2 s reuse grace, and
	// its port with it, not 16 s later
	time.Sleep(5 * time.Second)
	batch(2)
	if n := drops(ctx, d)["no_lport"]; n != 0 {
		t.Errorf("%d connections dropped as no_lport", n)
	}
}

// drops reads the daemon's drop counters (nil when it cannot).
func drops(ctx context.Context, d *Daemon) map[string]uint64 {
	st, err := d.Client().Stats(ctx)
	if err != nil {
		return map[string]uint64{"(stats unreadable: " + fmt.Sprint(err) + ")": 0}
	}
	return st.Drops
}
