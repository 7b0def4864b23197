// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// netnsPair builds two network namespaces joined by a veth (a0 in the
// first, b0 in the second) and returns their names; t.Cleanup removes
// them, also when the test fails. The second namespace answers for
// 10.77.0.2, 10.77.0.3 and fd77::2 on the link and for 10.77.1.1 behind
// 10.77.0.2 (a route in the first namespace).
func netnsPair(t *testing.T) (lb, peer string) {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces")
	testenv.RequireTool(t, "ip")
	base := fmt.Sprintf("xlb-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
	lb, peer = base+"-lb", base+"-peer"
	for _, ns := range []string{lb, peer} {
		mustIP(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	mustIP(t, "link", "add", "a0", "netns", lb, "type", "veth", "peer", "name", "b0", "netns", peer)
	for _, args := range [][]string{
		{"-n", lb, "addr", "add", "10.77.0.1/24", "dev", "a0"},
		{"-n", lb, "addr", "add", "fd77::1/64", "dev", "a0", "nodad"},
		{"-n", peer, "addr", "add", "10.77.0.2/24", "dev", "b0"},
		{"-n", peer, "addr", "add", "10.77.0.3/24", "dev", "b0"},
		{"-n", peer, "addr", "add", "fd77::2/64", "dev", "b0", "nodad"},
		{"-n", peer, "addr", "add", "10.77.1.1/32", "dev", "lo"},
		{"-n", lb, "link", "set", "lo", "up"},
		{"-n", peer, "link", "set", "lo", "up"},
		{"-n", lb, "link", "set", "a0", "up"},
		{"-n", peer, "link", "set", "b0", "up"},
		{"-n", lb, "route", "add", "10.77.1.0/24", "via", "10.77.0.2"},
	} {
		mustIP(t, args...)
	}
	return lb, peer
}

func mustIP(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// neighIn reads the entry for h in namespace ns.
func neighIn(t *testing.T, ns string, h Hop) (entry, bool) {
	t.Helper()
	out := mustIP(t, "-n", ns, "-j", "neigh", "show", "to", h.Addr.String(), "dev", h.Dev, "nud", "all")
	entries, err := parseNeigh([]byte(out), h.Dev)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Hop == h {
			return e, true
		}
	}
	return entry{}, false
}

// within polls cond every 20 ms for up to d.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func reachable(e entry) bool {
	for _, s := range e.States {
		if s == "REACHABLE" {
			return true
		}
	}
	return false
}

func TestManagedEntriesInNetns(t *testing.T) {
	lb, _ := netnsPair(t)
	perm := hop("a0", "10.77.0.7")
	mustIP(t, "-n", lb, "neigh", "replace", "10.77.0.7", "dev", "a0", "lladdr", "02:00:00:00:00:07", "nud", "permanent")

	m := New(Options{
		Logger:     slog.New(slog.DiscardHandler),
		Interfaces: []string{"a0"},
		Refresh:    time.Hour, // no periodic reconcile during the test
		IPCommand:  []string{"ip", "-n", lb},
		NoMonitor:  true,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait(); _ = m.Close() })

	// 10.77.1.1 is behind the gateway 10.77.0.2; 10.77.0.7 has the
	// operator's PERMANENT entry.
	if err := m.Sync(addrs("10.77.0.3", "10.77.1.1", "fd77::2", "10.77.0.7")); err != nil {
		t.Fatal(err)
	}
	if m.mode != modeManaged {
		t.Fatalf("mode %v, want managed entries on this kernel", m.mode)
	}
	wantUp := []Hop{hop("a0", "10.77.0.3"), hop("a0", "10.77.0.2"), hop("a0", "fd77::2")}
	for _, h := range wantUp {
		var e entry
		ok := within(5*time.Second, func() bool {
			var present bool
			e, present = neighIn(t, lb, h)
			return present && reachable(e)
		})
		if !ok || !e.Managed {
			t.Errorf("%v: %+v, want a managed REACHABLE entry without traffic", h, e)
		}
	}
	if e, ok := neighIn(t, lb, perm); !ok || e.Managed || !e.operator() {
		t.Errorf("operator's entry: %+v (present %v), want it PERMANENT as made", e, ok)
	}

	// Flushed (as after a garbage collection): a request from the data
	// path brings it back within a second.
	gw := hop("a0", "10.77.0.2")
	mustIP(t, "-n", lb, "neigh", "flush", "all")
	if _, ok := neighIn(t, lb, gw); ok {
		t.Fatal("flush left the entry")
	}
	var ifindex int
	for i, name := range mustLinks(t, lb) {
		if name == "a0" {
			ifindex = i
		}
	}
	m.Request(ifindex, gw.Addr)
	if !within(time.Second, func() bool { e, ok := neighIn(t, lb, gw); return ok && e.Managed }) {
		t.Error("a request did not bring the flushed entry back within a second")
	}

	// 10.77.0.3 is no longer a real: its entry goes; the gateway stays.
	if err := m.Sync(addrs("10.77.1.1", "fd77::2", "10.77.0.7")); err != nil {
		t.Fatal(err)
	}
	if e, ok := neighIn(t, lb, hop("a0", "10.77.0.3")); ok {
		t.Errorf("removed real's entry still there: %+v", e)
	}
	if _, ok := neighIn(t, lb, gw); !ok {
		t.Error("the gateway's entry went with another real")
	}

	cancel()
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	out := mustIP(t, "-n", lb, "-j", "neigh", "show", "nud", "all")
	entries, err := parseNeigh([]byte(out), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Managed {
			t.Errorf("after Close: %+v still there", e)
		}
	}
	if e, ok := neighIn(t, lb, perm); !ok || !e.operator() {
		t.Errorf("after Close the operator's entry is %+v (present %v), want PERMANENT", e, ok)
	}
}

// TestMonitorReAddsFlushed checks the `ip monitor` trigger: a flush is
// undone by an early reconcile, without a request or the periodic one.
func TestMonitorReAddsFlushed(t *testing.T) {
	lb, _ := netnsPair(t)
	m := New(Options{
		Logger:     slog.New(slog.DiscardHandler),
		Interfaces: []string{"a0"},
		Refresh:    time.Hour,
		IPCommand:  []string{"ip", "-n", lb},
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait(); _ = m.Close() })

	h := hop("a0", "10.77.0.3")
	if err := m.Sync(addrs(h.Addr.String())); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // ip monitor is listening
	mustIP(t, "-n", lb, "neigh", "flush", "all")
	if !within(3*time.Second, func() bool { e, ok := neighIn(t, lb, h); return ok && e.Managed }) {
		t.Error("the flushed entry was not re-added after ip monitor reported it")
	}
}

func mustLinks(t *testing.T, ns string) map[int]string {
	t.Helper()
	names, err := parseLinks([]byte(mustIP(t, "-n", ns, "-j", "link", "show")))
	if err != nil {
		t.Fatal(err)
	}
	return names
}
