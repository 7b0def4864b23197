// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeIP plays ip(8) over a neighbour table in memory.
type fakeIP struct {
	mu     sync.Mutex
	routes map[string]string // route get ADDR → its JSON answer
	gws    map[string]string // "-4 va" → the JSON answer of route show dev va
	links  map[int]string
	table  map[Hop]entry
	// refuse maps the flags of a replace ("managed extern_learn") to the
	// standard error it fails with.
	refuse map[string]string
	// dropManaged plays a kernel that ignores the managed flag.
	dropManaged bool
	calls       []string
	probes      []Hop
}

func newFake() *fakeIP {
	return &fakeIP{routes: map[string]string{}, gws: map[string]string{}, links: map[int]string{1: "lo", 2: "va"},
		table: map[Hop]entry{}, refuse: map[string]string{}}
}

func fail(stderr string) error {
	return &ipError{err: errors.New("exit status 2"), stderr: stderr}
}

func (f *fakeIP) run(_ context.Context, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	switch {
	case strings.HasPrefix(line, "-j route get "):
		out, ok := f.routes[args[3]]
		if !ok {
			return nil, fail("RTNETLINK answers: Network is unreachable")
		}
		return []byte(out), nil
	case len(args) == 6 && args[2] == "route" && args[3] == "show":
		if out, ok := f.gws[args[1]+" "+args[5]]; ok {
			return []byte(out), nil
		}
		return []byte("[]"), nil
	case line == "-j link show":
		var links []map[string]any
		for i, n := range f.links {
			links = append(links, map[string]any{"ifindex": i, "ifname": n})
		}
		return json.Marshal(links)
	case line == "-j neigh show nud all":
		return f.render(func(Hop) bool { return true }, true)
	case len(args) == 10 && args[2] == "neigh" && args[3] == "show":
		h := hop(args[7], args[5])
		return f.render(func(x Hop) bool { return x == h }, false)
	case strings.HasPrefix(line, "neigh replace "):
		h := hop(args[4], args[2])
		flags := args[5:]
		if stderr, ok := f.refuse[strings.Join(flags, " ")]; ok {
			return nil, fail(stderr)
		}
		f.table[h] = entry{Hop: h, States: []string{"REACHABLE"},
			Managed: slices.Contains(flags, "managed") && !f.dropManaged, ExternLearn: slices.Contains(flags, "extern_learn")}
		return nil, nil
	case strings.HasPrefix(line, "neigh del "):
		h := hop(args[4], args[2])
		if _, ok := f.table[h]; !ok {
			return nil, fail("RTNETLINK answers: No such file or directory")
		}
		delete(f.table, h)
		return nil, nil
	}
	return nil, fmt.Errorf("fake ip: unexpected %q", line)
}

// render answers neigh show the way ip does: flags as null-valued keys,
// "dev" only when the command named none.
func (f *fakeIP) render(match func(Hop) bool, withDev bool) ([]byte, error) {
	var rows []map[string]any
	for h, e := range f.table {
		if !match(h) {
			continue
		}
		row := map[string]any{"dst": h.Addr.String(), "state": e.States}
		if withDev {
			row["dev"] = h.Dev
		}
		if e.Managed {
			row["managed"] = nil
		}
		if e.ExternLearn {
			row["extern_learn"] = nil
		}
		rows = append(rows, row)
	}
	if rows == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(rows)
}

func (f *fakeIP) probe(dev string, addr netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes = append(f.probes, Hop{Dev: dev, Addr: addr})
	return nil
}

// has reports the entry for h, if any.
func (f *fakeIP) has(h Hop) (entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.table[h]
	return e, ok
}

// replaces counts the replace commands for h.
func (f *fakeIP) replaces(h Hop) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, "neigh replace "+h.Addr.String()+" dev "+h.Dev) {
			n++
		}
	}
	return n
}

// clock is a settable time for Manager.now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newTestManager returns a Manager over f with a settable clock.
func newTestManager(t *testing.T, f *fakeIP, opts Options) (*Manager, *clock) {
	t.Helper()
	opts.Runner, opts.Probe = f.run, f.probe
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Interfaces == nil {
		opts.Interfaces = []string{"va"}
	}
	m := New(opts)
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	m.now = c.now
	return m, c
}
