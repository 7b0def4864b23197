// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// TestFullTableKeepsEstablished fills a small connection table with real
// TCP connections through the lab's balancer: connections established
// before the table filled keep working through a burst of new ones, the
// new ones the table has no room for are refused (their SYNs dropped as
// conn_table_full and counted), and no packet of a held connection finds
// its entry gone.
func TestFullTableKeepsEstablished(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo := testTopology(t, 2)
	const size = 64 // connections: about 100 fit before probes find no room
	_, d := startLabWith(t, ctx, topo, fmt.Sprintf("conn_table: {ipv4: %d}\n", size)+topo.Config("rr"))
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)

	held := make([]*keepAlive, 32)
	for i := range held {
		k, err := dialKeepAlive(ctx, topo.Client(), vip)
		if err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		defer k.conn.Close()
		if _, err := k.getBody("/"); err != nil {
			t.Fatalf("held connection %d, first request: %v", i, err)
		}
		held[i] = k
	}

	// the burst: new connections, kept open, 16 dialling at a time
	const attempts, parallel = 320, 16
	var (
		mu       sync.Mutex
		opened   []net.Conn
		failures int
		wg       sync.WaitGroup
	)
	defer func() {
		for _, c := range opened {
			c.Close()
		}
	}()
	next := make(chan struct{}, attempts)
	for range attempts {
		next <- struct{}{}
	}
	close(next)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = netns.Run(topo.Client(), func() error {
				for range next {
					dl := net.Dialer{Timeout: 500 * time.Millisecond}
					c, err := dl.DialContext(ctx, "tcp", vip.String())
					mu.Lock()
					if err != nil {
						failures++
					} else {
						opened = append(opened, c)
					}
					mu.Unlock()
				}
				return nil
			})
		}()
	}
	wg.Wait()
	t.Logf("burst: %d connections opened, %d refused", len(opened), failures)
	if failures == 0 || len(opened) == 0 {
		t.Fatalf("burst of %d into a table for %d connections: %d opened, %d failed; want both", attempts, size, len(opened), failures)
	}

	for i, k := range held {
		if body, err := k.getBody("/"); err != nil || body == "" {
			t.Errorf("held connection %d after the burst: %q, %v", i, body, err)
		}
	}
	st, err := d.Client().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ConnTables) == 0 || st.ConnTables[0].Family != "ipv4" {
		t.Fatalf("stats: connection tables %+v", st.ConnTables)
	}
	v4 := st.ConnTables[0]
	if v4.Connections != size || v4.Refused < uint64(failures) || st.Drops["conn_table_full"] != v4.Refused {
		t.Errorf("IPv4 table %+v, drops conn_table_full %d: want %d connections, at least %d refused, each a drop",
			v4, st.Drops["conn_table_full"], size, failures)
	}
	if v4.ReplyMisses != 0 || v4.ForwardMisses != 0 {
		t.Errorf("packets of held connections found no entry: %d reply, %d forward misses", v4.ReplyMisses, v4.ForwardMisses)
	}
}
