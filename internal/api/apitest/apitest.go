// SPDX-License-Identifier: Apache-2.0

// Package apitest serves the xlb API over an in-memory backend, for tests
// of the API and of the commands that talk to it, as net/http/httptest
// does for HTTP handlers.
package apitest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/apply/applytest"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Backend is a daemon over an in-memory data path: it applies
// configurations with the daemon's own rules (internal/apply). Every real
// has one active and no inactive connection; Conns lists ConnEntries.
type Backend struct {
	mu      sync.Mutex
	dp      applytest.DataPath
	cfg     *config.Config
	cur     *config.Desired
	applies int
	rev     api.RevisionCounter

	// ConnEntries are what Conns lists.
	ConnEntries []loadbalancer.ConnEntry
	// Zeroed records the ZeroCounters calls: the service, or "all".
	Zeroed []string
	// Drops are what FollowDrops sends to every follower.
	Drops []api.Drop
	// NodeState is what Node returns; Drain sets its Drained.
	NodeState api.NodeStatus
}

// NewBackend returns a backend holding the configuration yaml.
func NewBackend(yaml string) (*Backend, error) {
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		return nil, err
	}
	// as a starting daemon: the file's interfaces are the ones attached
	want, err := cfg.Desired()
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: &config.Config{}, cur: &config.Desired{Interfaces: want.Interfaces, Mode: want.Mode}}
	if _, err := b.apply(cfg); err != nil {
		return nil, err
	}
	b.applies, b.rev = 0, api.RevisionCounter{}
	return b, nil
}

// Applies counts the configurations applied since NewBackend.
func (b *Backend) Applies() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applies
}

// Config returns a copy of the configuration in force.
func (b *Backend) Config() *config.Config {
	cfg, _ := b.ConfigRevision()
	return cfg
}

// ConfigRevision implements api.Backend.
func (b *Backend) ConfigRevision() (*config.Config, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.Clone(), b.rev.Current()
}

// Apply implements api.Backend.
func (b *Backend) Apply(cfg *config.Config, ifRevision uint64) (config.Changes, uint64, error) {
	return b.Update(ifRevision, func(c *config.Config) error {
		*c = *cfg
		return nil
	})
}

// Update implements api.Backend.
func (b *Backend) Update(ifRevision uint64, edit func(*config.Config) error) (config.Changes, uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.rev.Check(ifRevision); err != nil {
		return config.Changes{}, b.rev.Current(), err
	}
	cfg := b.cfg.Clone()
	if err := edit(cfg); err != nil {
		return config.Changes{}, b.rev.Current(), err
	}
	changes, err := b.apply(cfg)
	return changes, b.rev.Current(), err
}

// apply moves the in-memory data path to cfg as the daemon does (Check,
// then Move); b.mu is held.
func (b *Backend) apply(cfg *config.Config) (config.Changes, error) {
	want, err := apply.Check(&b.dp, cfg, nil)
	if err != nil {
		return config.Changes{}, err
	}
	changes, err := apply.Move(&b.dp, b.cur, want)
	if err != nil {
		return changes, err
	}
	b.rev.Applied(b.cfg, cfg)
	b.cfg, b.cur = cfg.Clone(), want
	b.applies++
	return changes, nil
}

// Status implements api.Backend.
func (b *Backend) Status() ([]loadbalancer.ServiceStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []loadbalancer.ServiceStatus
	for _, s := range b.cur.Services {
		st := loadbalancer.ServiceStatus{Service: s}
		for _, r := range b.cur.Reals[s.Key] {
			rs := loadbalancer.RealStatus{Real: r, ActiveConns: 1, TableWeight: r.Weight}
			if _, checked := b.cur.Health[s.Key]; checked {
				rs.Health = "up"
			}
			st.Reals = append(st.Reals, rs)
		}
		out = append(out, st)
	}
	return out, nil
}

// Conns implements api.Backend.
func (b *Backend) Conns(fn func(loadbalancer.ConnEntry) bool) error {
	for _, c := range b.ConnEntries {
		if !fn(c) {
			break
		}
	}
	return nil
}

// ZeroCounters implements api.Backend: it records the call.
func (b *Backend) ZeroCounters(k *loadbalancer.ServiceKey) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k == nil {
		b.Zeroed = append(b.Zeroed, "all")
		return nil
	}
	for _, s := range b.cur.Services {
		if s.Key == *k {
			b.Zeroed = append(b.Zeroed, k.String())
			return nil
		}
	}
	return fmt.Errorf("zero counters: service %s: %w", *k, loadbalancer.ErrNotFound)
}

// Stats implements api.Backend: two ip_truncated drops, five XDP_TX, an
// IPv4 connection table a quarter full and a local IP that ran out of
// FollowDrops sends the backend's Drops, then waits for ctx.
func (b *Backend) FollowDrops(ctx context.Context, fn func(api.Drop)) error {
	for _, d := range b.Drops {
		fn(d)
	}
	<-ctx.Done()
	return nil
}

// Daemon is a daemon started an hour before the test began, on eth0 in
// native mode.
func (b *Backend) Daemon() api.DaemonInfo {
	return api.DaemonInfo{Started: started, ConfigPath: "/etc/xlb/xlb.yaml", PinPath: "/sys/fs/bpf/xlb",
		Interfaces: []api.Interface{{Name: "eth0", Mode: "native"}}}
}

var started = time.Now().Add(-time.Hour)

// Node implements api.Backend: the backend's NodeState.
func (b *Backend) Node() api.NodeStatus { return b.NodeState }

// Drain implements api.Backend: it sets NodeState.Drained, or fails
// as a node without a speaker does when NodeState has no BGP.
func (b *Backend) Drain(drained bool) error {
	if b.NodeState.BGP == nil {
		return api.ErrNoSpeaker
	}
	b.NodeState.Drained = drained
	return nil
}

// ports 7 times.
func (b *Backend) Stats() (api.Stats, error) {
	return api.Stats{Drops: map[string]uint64{"ip_truncated": 2}, Verdicts: map[string]uint64{"tx": 5},
		ConnTables: []api.ConnTable{{Family: "ipv4", MaxEntries: 1024, Connections: 512, MemoryBytes: 106496, Entries: 300, LiveEntries: 256, Occupancy: 0.25,
			Inserts: 400, Removals: 100, Refused: 0, HalfOpenDrops: 4, ReplyMisses: 3, ForwardMisses: 1}},
		LocalIPs: []api.LocalIPStats{{Address: netip.MustParseAddr("198.51.100.254"), NoLport: 7}}}, nil
}

// Serve serves the API over a Backend holding yaml on a unix socket in
// a test directory until the test ends, and returns the backend and the
// socket's path.
func Serve(t testing.TB, yaml string) (*Backend, string) {
	t.Helper()
	return ServeWrapped(t, yaml, nil)
}

// ServeWrapped is Serve with the API's handler wrapped by wrap (when not
// nil), for tests that watch or interleave requests.
func ServeWrapped(t testing.TB, yaml string, wrap func(b *Backend, h http.Handler) http.Handler) (*Backend, string) {
	t.Helper()
	b, err := NewBackend(yaml)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	h := api.Handler(b, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if wrap != nil {
		h = wrap(b, h)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b, sock
}
