// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultRefresh       = 10 * time.Second // reconcile period
	DefaultRequestExpiry = 10 * time.Minute // an on-demand entry's life without a request
	DefaultMaxRequested  = 65536            // on-demand entries kept at most
	DefaultDedupe        = 500 * time.Millisecond
)

// syncTimeout bounds the ip commands of one Sync.
const syncTimeout = time.Minute

// requestQueue is how many on-demand requests wait for the worker; more
// are dropped (the next dropped packet asks again).
const requestQueue = 1024

// Options configure a Manager.
type Options struct {
	Logger *slog.Logger
	// Interfaces are the attached interfaces: the gateways of the routes
	// out of them get an entry.
	Interfaces []string
	// Refresh is the reconcile period (default DefaultRefresh).
	Refresh time.Duration
	// RequestExpiry is how long an entry added on request is kept
	// without a new request (default DefaultRequestExpiry).
	RequestExpiry time.Duration
	// MaxRequested caps the entries added on request (default
	// DefaultMaxRequested).
	MaxRequested int
	// Dedupe is the time within which a repeated Request for the same
	// next hop is ignored (default DefaultDedupe).
	Dedupe time.Duration
	// IPCommand is the ip(8) command line the arguments follow (default
	// ["ip"]; e.g. ["ip", "-n", "ns"] to work in a network namespace).
	IPCommand []string
	// Runner, if set, runs ip instead of IPCommand (tests); the change
	// monitor is then off.
	Runner Runner
	// Probe, if set, replaces the fallback's UDP probe (tests).
	Probe func(dev string, addr netip.Addr) error
	// NoMonitor turns off the `ip monitor` triggers of early reconciles.
	NoMonitor bool
	// Record, if set, is told of each entry before the Manager adds it
	// and after it deletes it, so that a later Manager can take over.
	Record Recorder
	// Adopt are entries an earlier Manager added (from its Record): they
	// count as added by this one, so those no longer wanted are deleted
	// at the first reconcile, and the rest at Close.
	Adopt []Hop
	// Lookup, if set, finds the destinations' next hops over netlink in
	// one pass instead of one `ip route get` each: a reconcile of
	// thousands of reals then costs milliseconds, not seconds.
	Lookup *Lookup
}

// Recorder keeps the record of the entries a Manager added across
// processes (the daemon keeps it next to its pins).
type Recorder interface {
	Record(Hop) error
	Forget(Hop) error
}

// mode is how next hops are kept resolved, found at the first add.
type mode int

const (
	modeUnknown  mode = iota
	modeManaged       // managed neighbour entries (Linux 5.16+)
	modeFallback      // UDP probes (older kernels)
)

// reqKey is an on-demand request as the data path makes it.
type reqKey struct {
	ifindex int
	addr    netip.Addr
}

// Manager keeps neighbour entries resolved for the next hops xlb forwards
// to. Its methods are safe for concurrent use.
type Manager struct {
	log                    *slog.Logger
	ifaces                 []string
	refresh, expiry, dedup time.Duration
	max                    int
	ipCmd                  []string
	run                    Runner
	probe                  func(dev string, addr netip.Addr) error
	monitor                bool
	now                    func() time.Time

	reqs   chan reqKey   // on-demand requests for the worker
	kick   chan struct{} // an early reconcile
	want   chan struct{} // Want set new destinations: reconcile now
	lookup *Lookup

	wmu     sync.Mutex
	pending []netip.Addr // the destinations of the last Want
	hasPend bool

	rmu      sync.Mutex
	recent   map[reqKey]time.Time // when each request was last queued
	prunedAt time.Time            // when recent was last pruned

	mu        sync.Mutex // the state below and the ip commands that change entries
	closed    bool
	mode      mode
	flags     []string // the flags managed entries are added with
	dests     []netip.Addr
	synced    map[Hop]bool      // wanted by the last Sync
	requested map[Hop]time.Time // on-demand hops and their last request
	added     map[Hop]bool      // entries this Manager added
	rec       Recorder
	names     map[int]string // interface names by index
	namesAt   time.Time
	fullAt    time.Time // when the MaxRequested cap was last logged
	lastErr   string    // the last reconcile error logged
}

// New returns a Manager; Run starts its work.
func New(opts Options) *Manager {
	m := &Manager{
		log:       opts.Logger,
		ifaces:    append([]string(nil), opts.Interfaces...),
		refresh:   opts.Refresh,
		expiry:    opts.RequestExpiry,
		dedup:     opts.Dedupe,
		max:       opts.MaxRequested,
		ipCmd:     opts.IPCommand,
		run:       opts.Runner,
		probe:     opts.Probe,
		monitor:   !opts.NoMonitor && opts.Runner == nil,
		now:       time.Now,
		reqs:      make(chan reqKey, requestQueue),
		kick:      make(chan struct{}, 1),
		want:      make(chan struct{}, 1),
		lookup:    opts.Lookup,
		recent:    map[reqKey]time.Time{},
		synced:    map[Hop]bool{},
		requested: map[Hop]time.Time{},
		added:     map[Hop]bool{},
		rec:       opts.Record,
	}
	for _, h := range opts.Adopt {
		m.added[h] = true
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.refresh <= 0 {
		m.refresh = DefaultRefresh
	}
	if m.expiry <= 0 {
		m.expiry = DefaultRequestExpiry
	}
	if m.dedup <= 0 {
		m.dedup = DefaultDedupe
	}
	if m.max <= 0 {
		m.max = DefaultMaxRequested
	}
	if len(m.ipCmd) == 0 {
		m.ipCmd = []string{"ip"}
	}
	if m.run == nil {
		m.run = execRunner(m.ipCmd)
	}
	if m.probe == nil {
		m.probe = udpProbe
	}
	return m
}

// Sync sets the destinations the daemon forwards to (each real's address)
// and brings the entries in line at once: an entry for the next hop of
// each and for the gateways of the attached interfaces, none any more for
// what is no longer wanted. An error names the destinations that could not
// be resolved or entries that could not be changed; the rest are done.
func (m *Manager) Sync(dests []netip.Addr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wmu.Lock()
	m.pending, m.hasPend = nil, false // older than dests
	m.wmu.Unlock()
	m.dests = append(m.dests[:0:0], dests...)
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	return m.reconcile(ctx)
}

// Want sets the destinations as Sync does, without waiting: the worker
// (Run) reconciles as soon as it is free. The daemon calls it at every
// apply, which must never wait on ip(8) or on a neighbour.
func (m *Manager) Want(dests []netip.Addr) {
	m.wmu.Lock()
	m.pending, m.hasPend = append(m.pending[:0:0], dests...), true
	m.wmu.Unlock()
	select {
	case m.want <- struct{}{}:
	default:
	}
}

// Kick asks for an early reconcile (at most one a second): the daemon
// sees a next hop unresolved, and a reconcile re-adds or probes it.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// takeWanted moves the destinations of the last Want, if any, into
// m.dests; m.mu is held.
func (m *Manager) takeWanted() {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.hasPend {
		m.dests, m.pending, m.hasPend = m.pending, nil, false
	}
}

// Request asks for the next hop addr on interface ifindex to be resolved:
// the data path dropped a packet for it. It never blocks; a request for
// the same next hop within Dedupe of the last one, or while the queue is
// full, is dropped (the next dropped packet asks again).
func (m *Manager) Request(ifindex int, addr netip.Addr) {
	if !addr.IsValid() {
		return
	}
	k := reqKey{ifindex, addr.Unmap()}
	now := m.now()
	m.rmu.Lock()
	if t, ok := m.recent[k]; ok && now.Sub(t) < m.dedup {
		m.rmu.Unlock()
		return
	}
	if len(m.recent) >= m.max && now.Sub(m.prunedAt) >= m.dedup {
		m.pruneRecent(now)
	}
	if len(m.recent) >= m.max {
		m.rmu.Unlock()
		return
	}
	m.recent[k] = now
	m.rmu.Unlock()
	select {
	case m.reqs <- k:
	default:
	}
}

// pruneRecent forgets requests older than Dedupe; m.rmu is held.
func (m *Manager) pruneRecent(now time.Time) {
	m.prunedAt = now
	for k, t := range m.recent {
		if now.Sub(t) >= m.dedup {
			delete(m.recent, k)
		}
	}
}

// minKick is the least time between two reconciles that `ip monitor`
// triggers.
const minKick = time.Second

// Run serves requests and reconciles every Refresh, and early on route,
// link and neighbour deletions reported by `ip monitor`, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.monitor {
		go m.watch(ctx)
	}
	tick := time.NewTicker(m.refresh)
	defer tick.Stop()
	var last time.Time
	var pending <-chan time.Time
	reconcile := func() {
		last = time.Now()
		m.mu.Lock()
		m.takeWanted()
		err := m.reconcile(ctx)
		m.mu.Unlock()
		m.logReconcile(err)
		m.rmu.Lock()
		m.pruneRecent(m.now())
		m.rmu.Unlock()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-m.reqs:
			m.serve(ctx, k)
		case <-tick.C:
			reconcile()
		case <-m.want:
			reconcile()
		case <-m.kick:
			if since := time.Since(last); since >= minKick {
				reconcile()
			} else if pending == nil {
				pending = time.After(minKick - since)
			}
		case <-pending:
			pending = nil
			reconcile()
		}
	}
}

// logReconcile logs a periodic reconcile's error when it differs from the
// last one logged, so that an unreachable real does not log every period.
func (m *Manager) logReconcile(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	m.mu.Lock()
	changed := msg != m.lastErr
	m.lastErr = msg
	m.mu.Unlock()
	switch {
	case changed && err != nil:
		m.log.Warn("neighbours: reconcile", "err", err)
	case changed:
		m.log.Info("neighbours: reconcile succeeds again")
	}
}

// Close deletes every entry the Manager added; it does no work after.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if len(m.added) == 0 {
		return nil
	}
	ctx := context.Background()
	t, err := m.table(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for h := range m.added {
		if e, ok := t[h]; ok && e.Managed && !e.operator() {
			if err := m.del(ctx, h); err != nil {
				errs = append(errs, err)
				continue // stays recorded, for the next run to remove
			}
		}
		m.disown(h)
	}
	return errors.Join(errs...)
}

// Release ends the Manager without deleting anything: the entries it
// added stay (and stay recorded) for the next Manager to take over. It is
// the daemon's way out when it hands the data path over to its successor.
func (m *Manager) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
}
