// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
)

// TestApplyDoesNotWaitOnNeighbour: a real whose neighbour never answers
// (an address on real 1's link that no one owns) is added, re-weighted
// and removed in 50 applies while a stream is held through the VIP. Each
// apply returns at once, saying the real is unresolved; the API shows it
// unresolved with the reason; new connections never go to it (each one
// succeeds) and the stream completes byte for byte. A real whose
// neighbour answers, removed and added back, gets connections again.
func TestApplyDoesNotWaitOnNeighbour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 2, "rr")
	client := d.Client()
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	svcPath := api.ServicePath("tcp", topo.VIP().String(), ServicePort)
	dead := topo.addr(11, 9)
	deadPath := fmt.Sprintf("/reals/%s/%d", dead, ServicePort)
	real2Path := fmt.Sprintf("/reals/%s/%d", topo.RealAddr(2), ServicePort)

	const applies, chunk = 50, 256 << 10
	const size = (applies + 14) * chunk
	paced, _ := startStream(t, ctx, topo, vip, size, chunk, applies)

	one := 1
	var slowest time.Duration
	deadIn := false
	for i := range applies {
		var c change
		switch {
		case i == 9 || i == 29: // a resolved real leaves...
			c = change{http.MethodDelete, real2Path, nil}
		case i == 19 || i == 39: // ... and comes back
			c = change{http.MethodPost, "/reals", config.Real{Address: topo.RealAddr(2).String(), Port: ServicePort, Weight: &one}}
		case !deadIn:
			c = change{http.MethodPost, "/reals", config.Real{Address: dead.String(), Port: ServicePort, Weight: &one}}
		case i%3 == 0:
			c = change{http.MethodDelete, deadPath, nil}
		default:
			c = change{http.MethodPut, deadPath, api.Weight(1 + i%4)}
		}
		start := time.Now()
		res, err := client.Change(ctx, c.method, svcPath+c.path, c.body)
		slowest = max(slowest, time.Since(start))
		if err != nil {
			t.Fatalf("apply %d (%s %s): %v", i+1, c.method, c.path, err)
		}
		if c.path == "/reals" && strings.Contains(fmt.Sprint(c.body), dead.String()) {
			deadIn = true
		} else if c.method == http.MethodDelete && c.path == deadPath {
			deadIn = false
		}
		warned := slices.ContainsFunc(res.Warnings, func(w string) bool {
			return strings.Contains(w, dead.String()) && strings.Contains(w, "unresolved")
		})
		if warned != deadIn {
			t.Fatalf("apply %d (%s %s): warnings %q; the dead real is in: %v", i+1, c.method, c.path, res.Warnings, deadIn)
		}
		if i == 0 {
			checkUnresolvedShown(t, ctx, client, dead)
		}
		if deadIn && i%10 == 4 { // new connections never meet the dead real
			for j := range 4 {
				if _, err := fetchReal(ctx, topo, vip); err != nil {
					t.Fatalf("after apply %d, new connection %d: %v", i+1, j+1, err)
				}
			}
			if r := realOfAPI(t, ctx, client, dead); r.Stats.Conns != 0 || r.ActiveConns+r.InactiveConns != 0 {
				t.Fatalf("after apply %d, the dead real got connections: %+v", i+1, r)
			}
		}
		paced.tick(t, fmt.Sprintf("after apply %d of %d", i+1, applies))
	}
	paced.finish(t)
	t.Logf("%d applies with a real whose neighbour never answers; the slowest took %v", applies, slowest)

	// real 2 was added back: it resolves and gets new connections
	seen := map[string]int{}
	for range 8 {
		name, err := fetchReal(ctx, topo, vip)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if seen["real1"] == 0 || seen["real2"] == 0 {
		t.Errorf("8 new connections went %v, want both reals", seen)
	}
}

// checkUnresolvedShown checks that the API shows the real at addr
// unresolved, with a reason naming its next hop.
func checkUnresolvedShown(t *testing.T, ctx context.Context, client *api.Client, addr netip.Addr) {
	t.Helper()
	r := realOfAPI(t, ctx, client, addr)
	if r.NextHop != api.NextHopUnresolved || !strings.Contains(r.NextHopReason, "next hop "+addr.String()) {
		t.Errorf("API shows the dead real with next_hop %q, reason %q", r.NextHop, r.NextHopReason)
	}
}

// realOfAPI returns the real at addr as the API shows it.
func realOfAPI(t *testing.T, ctx context.Context, client *api.Client, addr netip.Addr) api.Real {
	t.Helper()
	svcs, err := client.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		for _, r := range s.Reals {
			if r.Address == addr {
				return r
			}
		}
	}
	t.Fatalf("the API does not show the real %s", addr)
	return api.Real{}
}

// fetchReal opens a new connection to vip from the client and returns
// the name of the real that answered.
func fetchReal(ctx context.Context, topo Topology, vip netip.AddrPort) (string, error) {
	k, err := dialKeepAlive(ctx, topo.Client(), vip)
	if err != nil {
		return "", err
	}
	defer k.conn.Close()
	body, err := k.getBody("/")
	if err != nil {
		return "", err
	}
	return strings.Fields(body)[0], nil
}
