// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// lab is the fake's topology: 10.9.0.2 on-link, 10.9.1.1 behind gateway
// 10.9.0.2, 10.9.2.1 behind gateway 10.9.0.3, fd09::2 on-link; routes out
// of va via 10.9.0.254 (default) and fd09::fe.
func lab() *fakeIP {
	f := newFake()
	f.routes["10.9.0.2"] = `[{"dst":"10.9.0.2","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`
	f.routes["10.9.0.5"] = `[{"dst":"10.9.0.5","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`
	f.routes["10.9.1.1"] = `[{"dst":"10.9.1.1","gateway":"10.9.0.2","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`
	f.routes["10.9.2.1"] = `[{"dst":"10.9.2.1","gateway":"10.9.0.3","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`
	f.routes["fd09::2"] = `[{"dst":"fd09::2","from":"::","dev":"va","protocol":"kernel","prefsrc":"fd09::1","metric":256,"flags":[],"pref":"medium"}]`
	f.routes["10.9.0.1"] = `[{"type":"local","dst":"10.9.0.1","dev":"lo","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":["local"]}]`
	f.gws["-4 va"] = `[{"dst":"default","gateway":"10.9.0.254","flags":[]},{"dst":"10.9.0.0/24","protocol":"kernel","scope":"link","prefsrc":"10.9.0.1","flags":[]}]`
	f.gws["-6 va"] = `[{"dst":"fd09::/64","protocol":"kernel","metric":256,"flags":[],"pref":"medium"},{"dst":"default","gateway":"fd09::fe","metric":1024,"flags":[],"pref":"medium"}]`
	return f
}

func addrs(s ...string) []netip.Addr {
	var a []netip.Addr
	for _, x := range s {
		a = append(a, netip.MustParseAddr(x))
	}
	return a
}

func TestSyncAddsAndRemoves(t *testing.T) {
	f := lab()
	perm := hop("va", "10.9.0.3")
	f.table[perm] = entry{Hop: perm, States: []string{"PERMANENT"}}
	m, _ := newTestManager(t, f, Options{})

	// 10.9.0.1 is local (no entry); 10.9.2.1's gateway has the
	// operator's PERMANENT entry.
	if err := m.Sync(addrs("10.9.0.5", "10.9.1.1", "10.9.2.1", "fd09::2", "10.9.0.1")); err != nil {
		t.Fatal(err)
	}
	for _, h := range []Hop{hop("va", "10.9.0.5"), hop("va", "10.9.0.2"), hop("va", "fd09::2"), hop("va", "10.9.0.254"), hop("va", "fd09::fe")} {
		e, ok := f.has(h)
		if !ok || !e.Managed || !e.ExternLearn {
			t.Errorf("%v: entry %+v (present %v), want managed extern_learn", h, e, ok)
		}
	}
	if n := f.replaces(perm); n != 0 {
		t.Errorf("the operator's PERMANENT entry was replaced %d times", n)
	}

	// A second Sync with the same set changes nothing.
	before := f.replaces(hop("va", "10.9.0.5"))
	if err := m.Sync(addrs("10.9.0.5", "10.9.1.1", "10.9.2.1", "fd09::2")); err != nil {
		t.Fatal(err)
	}
	if n := f.replaces(hop("va", "10.9.0.5")); n != before {
		t.Errorf("entry replaced again on an unchanged Sync: %d → %d", before, n)
	}

	// Someone flushes an entry: the next Sync (or reconcile) re-adds it.
	delete(f.table, hop("va", "fd09::2"))
	// 10.9.0.5 and fd09::2 are no longer wanted; 10.9.1.1 stays.
	if err := m.Sync(addrs("10.9.1.1", "10.9.2.1")); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(hop("va", "10.9.0.5")); ok {
		t.Error("entry of a removed real still there")
	}
	if _, ok := f.has(hop("va", "10.9.0.2")); !ok {
		t.Error("entry of a kept real's gateway removed")
	}

	// An unreachable real is reported, the others are done.
	if err := m.Sync(addrs("10.200.0.1", "10.9.0.5")); err == nil {
		t.Error("Sync with an unreachable real: no error")
	}
	if _, ok := f.has(hop("va", "10.9.0.5")); !ok {
		t.Error("a reachable real lost its entry because another is unreachable")
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for h, e := range f.table {
		if h != perm {
			t.Errorf("after Close: %v still there (%+v)", h, e)
		}
	}
	if _, ok := f.has(perm); !ok {
		t.Error("Close removed the operator's PERMANENT entry")
	}
	// After Close, nothing is added any more.
	if err := m.Sync(addrs("10.9.0.5")); err != nil {
		t.Fatal(err)
	}
	if len(f.table) != 1 {
		t.Errorf("Sync after Close added entries: %v", f.table)
	}
}

func TestOperatorTakesOver(t *testing.T) {
	f := lab()
	m, _ := newTestManager(t, f, Options{Interfaces: []string{}})
	if err := m.Sync(addrs("10.9.0.5")); err != nil {
		t.Fatal(err)
	}
	h := hop("va", "10.9.0.5")
	f.table[h] = entry{Hop: h, States: []string{"NOARP"}}
	if err := m.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(h); !ok {
		t.Error("the operator's NOARP entry, made over ours, was deleted")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(h); !ok {
		t.Error("Close deleted the operator's NOARP entry")
	}
}

func TestModeDetection(t *testing.T) {
	for _, tc := range []struct {
		name        string
		refuse      map[string]string
		dropManaged bool
		wantMode    mode
		wantFlags   []string
		wantErr     bool
	}{
		{
			name:      "managed entries",
			wantMode:  modeManaged,
			wantFlags: []string{"managed", "extern_learn"},
		},
		{
			name:      "managed without extern_learn",
			refuse:    map[string]string{"managed extern_learn": "Error: Invalid NTF_* flag combination."},
			wantMode:  modeManaged,
			wantFlags: []string{"managed"},
		},
		{
			name: "kernel before 5.16",
			refuse: map[string]string{
				"managed extern_learn": "RTNETLINK answers: Invalid argument",
				"managed":              "RTNETLINK answers: Invalid argument",
			},
			wantMode: modeFallback,
		},
		{
			name: "ip before 5.16",
			refuse: map[string]string{
				"managed extern_learn": `Error: either "to" is duplicate, or "managed" is a garbage.`,
				"managed":              `Error: either "to" is duplicate, or "managed" is a garbage.`,
			},
			wantMode: modeFallback,
		},
		{
			name:        "kernel that ignores the flag",
			dropManaged: true,
			wantMode:    modeFallback,
		},
		{
			name: "another failure decides nothing",
			refuse: map[string]string{
				"managed extern_learn": `Cannot find device "va"`,
			},
			wantMode: modeUnknown,
			wantErr:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lab()
			f.refuse, f.dropManaged = tc.refuse, tc.dropManaged
			m, _ := newTestManager(t, f, Options{Interfaces: []string{}})
			err := m.Sync(addrs("10.9.0.5"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Sync: %v, want error %v", err, tc.wantErr)
			}
			if m.mode != tc.wantMode || !slices.Equal(m.flags, tc.wantFlags) {
				t.Errorf("mode %v flags %v, want %v %v", m.mode, m.flags, tc.wantMode, tc.wantFlags)
			}
			h := hop("va", "10.9.0.5")
			switch tc.wantMode {
			case modeFallback:
				if !slices.Equal(f.probes, []Hop{h}) {
					t.Errorf("probes %v, want one to %v", f.probes, h)
				}
				if _, ok := f.has(h); ok {
					t.Errorf("fallback left an entry: %+v", f.table[h])
				}
				// Every reconcile probes again while the hop is wanted;
				// nothing to delete on Close.
				if err := m.Sync(addrs("10.9.0.5")); err != nil {
					t.Fatal(err)
				}
				if len(f.probes) != 2 {
					t.Errorf("probes after a second Sync: %v, want 2", f.probes)
				}
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			case modeManaged:
				if len(f.probes) != 0 {
					t.Errorf("probes %v in managed mode", f.probes)
				}
				if e, ok := f.has(h); !ok || !e.Managed {
					t.Errorf("entry %+v (present %v), want managed", e, ok)
				}
			}
		})
	}
}

func TestRequestDedupe(t *testing.T) {
	f := lab()
	m, c := newTestManager(t, f, Options{})
	a := netip.MustParseAddr("10.9.0.9")
	m.Request(2, a)
	m.Request(2, a)
	m.Request(2, netip.AddrFrom16(a.As16())) // the same, v4-mapped
	if n := len(m.reqs); n != 1 {
		t.Fatalf("queued %d requests for one hop within the dedupe time, want 1", n)
	}
	m.Request(3, a) // another interface is another hop
	c.advance(DefaultDedupe)
	m.Request(2, a)
	if n := len(m.reqs); n != 3 {
		t.Fatalf("queued %d, want 3", n)
	}
	m.Request(2, netip.Addr{})
	if n := len(m.reqs); n != 3 {
		t.Fatalf("an invalid address was queued")
	}
	// A full queue drops without blocking.
	for i := range requestQueue + 10 {
		m.Request(2, netip.AddrFrom4([4]byte{10, 10, byte(i >> 8), byte(i)}))
	}
	if n := len(m.reqs); n != requestQueue {
		t.Fatalf("queue holds %d, want %d", n, requestQueue)
	}
}

func TestRequestKeepsAndExpires(t *testing.T) {
	f := lab()
	m, c := newTestManager(t, f, Options{Interfaces: []string{}})
	ctx := context.Background()
	h := hop("va", "10.9.0.9")
	m.serve(ctx, reqKey{2, h.Addr})
	if e, ok := f.has(h); !ok || !e.Managed {
		t.Fatalf("requested hop: entry %+v (present %v), want managed", e, ok)
	}
	// Kept while requested, through reconciles.
	c.advance(DefaultRequestExpiry / 2)
	m.serve(ctx, reqKey{2, h.Addr})
	c.advance(DefaultRequestExpiry / 2)
	if err := m.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(h); !ok {
		t.Fatal("a hop requested within the expiry lost its entry")
	}
	// Gone after the expiry without a request.
	c.advance(DefaultRequestExpiry / 2)
	if err := m.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(h); ok {
		t.Fatal("a hop not requested for the expiry kept its entry")
	}
	// A request for an unknown interface or for lo adds nothing.
	m.serve(ctx, reqKey{42, h.Addr})
	m.serve(ctx, reqKey{1, netip.MustParseAddr("127.0.0.1")})
	if len(f.table) != 0 {
		t.Errorf("entries %v, want none", f.table)
	}
}

func TestRequestCap(t *testing.T) {
	f := lab()
	m, _ := newTestManager(t, f, Options{Interfaces: []string{}, MaxRequested: 2})
	ctx := context.Background()
	for _, a := range []string{"10.9.0.11", "10.9.0.12", "10.9.0.13"} {
		m.serve(ctx, reqKey{2, netip.MustParseAddr(a)})
	}
	if _, ok := f.has(hop("va", "10.9.0.13")); ok || len(f.table) != 2 {
		t.Errorf("entries %v, want the first two only", f.table)
	}
	// A hop already requested is still served at the cap.
	delete(f.table, hop("va", "10.9.0.11"))
	m.serve(ctx, reqKey{2, netip.MustParseAddr("10.9.0.11")})
	if _, ok := f.has(hop("va", "10.9.0.11")); !ok {
		t.Error("a hop requested again at the cap was not re-added")
	}
}

func TestRunServesRequests(t *testing.T) {
	f := lab()
	m, c := newTestManager(t, f, Options{Interfaces: []string{}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	h := hop("va", "10.9.0.9")
	m.Request(2, h.Addr)
	waitFor(t, func() bool { _, ok := f.has(h); return ok })
	// Flushed: the next request after the dedupe time brings it back.
	f.mu.Lock()
	delete(f.table, h)
	f.mu.Unlock()
	c.advance(DefaultDedupe)
	m.Request(2, h.Addr)
	waitFor(t, func() bool { _, ok := f.has(h); return ok })
	cancel()
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.has(h); ok {
		t.Error("Close left the requested entry")
	}
}

// waitFor polls cond for up to 2 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2s")
}
