// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestLookupNextHops reads next hops over netlink in a namespace: an
// on-link destination, one behind a gateway, a local address, one
// without a route, one whose neighbour never answers, and the states an
// entry goes through (none, then resolved, or INCOMPLETE then FAILED for
// a silent address).
func TestLookupNextHops(t *testing.T) {
	lb, _ := netnsPair(t)
	l, err := NewLookup("/run/netns/" + lb)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := netip.MustParseAddr
	onLink, behind, local, noRoute, silent := a("10.77.0.2"), a("10.77.1.1"), a("10.77.0.1"), a("192.0.2.1"), a("10.77.0.99")

	got := l.NextHops([]netip.Addr{onLink, behind, local, noRoute, silent, onLink})
	if len(got) != 5 {
		t.Fatalf("want 5 destinations, got %d: %v", len(got), got)
	}
	check := func(dst netip.Addr, hop Hop, resolved bool, reason string) {
		t.Helper()
		nh := got[dst]
		if nh.Hop != hop || nh.Resolved != resolved || !strings.Contains(nh.Reason, reason) {
			t.Errorf("%s: got %+v, want hop %v resolved %v reason containing %q", dst, nh, hop, resolved, reason)
		}
	}
	// nothing talked to the peer yet: no entries
	check(onLink, Hop{Addr: onLink, Dev: "a0"}, false, "next hop 10.77.0.2 dev a0: no neighbour entry yet")
	check(behind, Hop{Addr: onLink, Dev: "a0"}, false, "no neighbour entry yet")
	check(local, Hop{Addr: local, Dev: "lo"}, true, "")
	check(noRoute, Hop{Addr: noRoute}, false, "no route to 192.0.2.1")
	check(silent, Hop{Addr: silent, Dev: "a0"}, false, "no neighbour entry yet")

	// managed entries make the kernel resolve: the peer answers, the
	// silent address never does
	mustIP(t, "-n", lb, "neigh", "replace", "10.77.0.2", "dev", "a0", "managed")
	mustIP(t, "-n", lb, "neigh", "replace", "10.77.0.99", "dev", "a0", "managed")
	if !within(5*time.Second, func() bool {
		got = l.NextHops([]netip.Addr{onLink, behind, silent})
		return got[onLink].Resolved && got[behind].Resolved && got[silent].Reason != "" &&
			!strings.Contains(got[silent].Reason, "no neighbour entry")
	}) {
		t.Fatalf("after a ping and a managed entry for a silent address: %+v", got)
	}
	if got[silent].Resolved || !strings.Contains(got[silent].Reason, "next hop 10.77.0.99 dev a0: ") {
		t.Errorf("silent address: %+v", got[silent])
	}
}
