// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/health"
	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// DefaultPinPath is the bpffs directory the daemon pins its maps in.
const DefaultPinPath = "/sys/fs/bpf/xlb"

// Options configure Run.
type Options struct {
	ConfigPath  string // YAML configuration (required)
	Socket      string // API unix socket (default api.DefaultSocket)
	MetricsAddr string // Prometheus address, e.g. 127.0.0.1:9468 ("" = off)
	WebAddr     string // the live page's address, e.g. 127.0.0.1:9469 ("" = off)
	PinPath     string // bpffs directory (default DefaultPinPath; "none" = no pinning)
	Mode        string // native | generic; overrides the file's xdp_mode
	// DropIncompatible replaces pinned maps of another layout (an
	// upgrade that changed them) instead of refusing to start.
	DropIncompatible bool
	Version          string
	Log              *slog.Logger

	// APIReadGroup is a group whose members may read the API (GET);
	// "" = root only.
	APIReadGroup string
}

// ConfigError is the error Run returns when the configuration file is
// refused; nothing was loaded or changed.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Daemon is a running xlb daemon.
type Daemon struct {
	opts  Options
	log   *slog.Logger
	dp    *datapath.Datapath
	mu    sync.Mutex // serialises changes
	cfg   *config.Config
	cur   *config.Desired
	rev   api.RevisionCounter // of cfg
	addrs hostAddrSet
	// fileMode is the xdp_mode of the file the daemon started with,
	// which --xdp-mode (opts.Mode) overrode (mode.go).
	fileMode string

	record   *hoststate.Record // what the daemon added to the host (lifecycle.go)
	tookOver bool              // the data path was pinned by an earlier run

	health        *health.Monitor
	healthChanges atomic.Uint64 // reals that went up or down

	started      time.Time
	hostWarnings []string // what the start found wrong with the host (status.go)
	// fileRevision is the revision at which the file was last applied
	// (start, reload): a later one has changes the file does not.
	fileRevision uint64

	redirects redirectMonitor // counts frames lost after a redirect (txmon.go)
	drops     dropFollowers   // the drop recorder's followers (drops.go)
	neigh     neighbours      // keeps next hops resolved (neigh.go)
	node      node            // the BGP speaker and the drain (node.go)
	conntable connTableWatch  // the connection tables' occupancy (conntable.go)
}

// Run starts the daemon and serves until ctx ends or a signal:
//   - SIGINT or SIGTERM (ctx ending) stops: it detaches the data path and
//     removes everything it added, pins, host addresses and neighbour
//     entries included;
//   - SIGUSR2 hands over: it exits and leaves the data path forwarding, for
//     the next daemon to take over without a gap (what `xlb daemon exit`
//     sends when systemd restarts the unit);
//   - SIGKILL or a crash leaves the data path forwarding too, and the next
//     daemon takes it over the same way.
func Run(ctx context.Context, opts Options) error {
	if opts.Socket == "" {
		opts.Socket = api.DefaultSocket
	}
	if opts.PinPath == "" {
		opts.PinPath = DefaultPinPath
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	cfg, err := config.Load(opts.ConfigPath)
	if err != nil {
		return &ConfigError{err}
	}
	fileMode := cfg.XDPMode
	if opts.Mode != "" {
		cfg.XDPMode = opts.Mode
	}
	want, err := cfg.Desired()
	if err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", opts.ConfigPath, err)}
	}
	if err := interfacesExist(want.Interfaces); err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", opts.ConfigPath, err)}
	}
	unlock, err := lockDaemon(opts.Socket)
	if err != nil {
		return err
	}
	defer unlock()
	d := &Daemon{opts: opts, log: opts.Log, fileMode: fileMode, started: time.Now()}
	d.node.kick = make(chan struct{}, 1)
	d.health = health.NewMonitor(d.onTransition)
	if err := d.start(cfg, want); err != nil {
		d.abort()
		return err
	}
	handOver := false
	defer func() { d.stop(!handOver) }()
	if err := d.startSpeaker(d.cur); err != nil {
		return err
	}

	srv, err := d.serveAPI()
	if err != nil {
		return err
	}
	defer srv.Close()
	if opts.MetricsAddr != "" {
		msrv, err := d.serveMetrics(opts.MetricsAddr)
		if err != nil {
			return err
		}
		defer msrv.Close()
	}
	if opts.WebAddr != "" {
		wsrv, err := d.serveWeb(opts.WebAddr)
		if err != nil {
			return err
		}
		defer wsrv.Close()
	}

	// the loops read the maps: they end before stop closes them, and
	// not at the signal: routes and connection sync go on through the
	// shutdown grace
	loopCtx, endLoops := context.WithCancel(ctx)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var loops sync.WaitGroup
	defer func() {
		endLoops()
		loops.Wait()
	}()
	loops.Go(func() { d.leastConnLoop(loopCtx) })
	loops.Go(func() { d.connTableLoop(loopCtx) })
	if err := d.startSync(loopCtx, &loops, d.cur); err != nil {
		return err
	}
	loops.Go(func() { d.routeLoop(loopCtx) })
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	d.log.Info("xlb daemon running", "config", opts.ConfigPath, "socket", opts.Socket,
		"interfaces", want.Interfaces, "services", len(want.Services), "pin_path", opts.PinPath)
	for {
		select {
		case <-ctx.Done():
			d.withdrawToStop()
			d.log.Info("xlb daemon stopping: removing the data path and what it added to the host")
			return nil
		case <-usr2:
			if d.opts.PinPath == "none" {
				d.log.Warn("SIGUSR2: without pins there is nothing to hand over; stopping")
				d.withdrawToStop()
				return nil
			}
			d.log.Info("xlb daemon exiting, leaving the data path forwarding for the next daemon")
			handOver = true
			return nil
		case <-hup:
			d.reload()
		}
	}
}

// interfacesExist checks, before anything is loaded, that every
// configured interface is on this host (in this network namespace).
func interfacesExist(names []string) error {
	var problems []string
	for i, name := range names {
		if _, err := net.InterfaceByName(name); err != nil {
			problems = append(problems, fmt.Sprintf("interfaces[%d]: %q is not an interface of this host", i, name))
		}
	}
	if problems != nil {
		return &config.ValidationError{Problems: problems}
	}
	return nil
}

// reload re-reads the configuration file (SIGHUP) and applies it. Changes
// made through the API since the file was last read are dropped: it says
// which.
func (d *Daemon) reload() {
	cfg, err := readConfig(d.opts.ConfigPath)
	if err == nil {
		err = d.reloadWith(cfg)
	}
	if err != nil {
		d.log.Error("reload refused, configuration unchanged", "config", d.opts.ConfigPath, "err", err)
	}
}

// reloadWith applies cfg, read from the file, and logs the live changes
// it drops.
func (d *Daemon) reloadWith(cfg *config.Config) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	live, since := d.rev.Current() != d.fileRevision, d.fileRevision
	changes, err := d.apply(cfg)
	if err != nil {
		return err
	}
	d.fileRevision = d.rev.Current()
	if live && !changes.Empty() {
		d.log.Warn("reload: the file replaced a configuration changed through the API or the CLI since it was read "+
			"(revision "+strconv.FormatUint(since, 10)+"): those changes are gone unless the file has them; "+
			"xlb config export writes the configuration in force, to keep such changes in the file",
			"config", d.opts.ConfigPath, "changes", changes.Brief(logChanges))
	}
	return nil
}

// readConfig reads and parses the configuration file. A file it cannot
// read is refused with that error, not parsed as an empty document.
func readConfig(path string) (*config.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	return config.Parse(b)
}

// ConfigRevision implements api.Backend: a deep copy of the configuration
// in force and its revision.
func (d *Daemon) ConfigRevision() (*config.Config, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Clone(), d.rev.Current()
}

// Apply implements api.Backend.
func (d *Daemon) Apply(cfg *config.Config, ifRevision uint64) (config.Changes, uint64, error) {
	return d.Update(ifRevision, func(c *config.Config) error {
		*c = *cfg
		return nil
	})
}

// Update implements api.Backend.
func (d *Daemon) Update(ifRevision uint64, edit func(cfg *config.Config) error) (config.Changes, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.rev.Check(ifRevision); err != nil {
		return config.Changes{}, d.rev.Current(), err
	}
	cfg := d.cfg.Clone()
	if err := edit(cfg); err != nil {
		return config.Changes{}, d.rev.Current(), err
	}
	changes, err := d.apply(cfg)
	return changes, d.rev.Current(), err
}

// logChanges is how many changes an apply logs one by one; the rest are
// counted.
const logChanges = 20

// apply moves the data path and the host addresses to cfg; d.mu is held.
// It is all or nothing: the new addresses go on the host first (a
// failure there changes nothing), then the maps (a failure there takes
// the new addresses off again). Addresses no longer wanted go last; one
// that cannot be removed stays recorded and is retried at the next apply
// and at stop.
func (d *Daemon) apply(cfg *config.Config) (config.Changes, error) {
	if err := overrideMode(cfg, d.opts.Mode, d.fileMode); err != nil {
		return config.Changes{}, err
	}
	// checked against the data path and the host before anything changes
	want, err := apply.Check(d.dp, cfg, d.hostOwns())
	if err != nil {
		return config.Changes{}, err
	}
	// an interface that is not there is named as such, before Move says
	// that changing the interfaces takes a restart
	if err := interfacesExist(want.Interfaces); err != nil {
		return config.Changes{}, err
	}
	if err := checkNodeChange(d.cur, want); err != nil {
		return config.Changes{}, err
	}
	if err := checkClusterChange(d.cur, want); err != nil {
		return config.Changes{}, err
	}
	if err := d.addrs.add(hostAddrs(want)); err != nil {
		return config.Changes{}, fmt.Errorf("nothing applied: %w", err)
	}
	warnings := d.checkNextHops(want)
	changes, err := apply.Move(d.dp, d.cur, want)
	if err != nil {
		if perr := d.addrs.prune(hostAddrs(d.cur)); perr != nil {
			d.log.Warn("take the new host addresses off again", "err", perr)
		}
		return changes, err
	}
	changes.Warnings = warnings
	// a name is the file's and the API's alone: say it changed
	changes.Renamed = config.Renames(d.cfg, cfg)
	d.rev.Applied(d.cfg, cfg)
	d.applyNode(want)
	d.cfg, d.cur = cfg.Clone(), want
	d.kickRoutes()
	d.syncHealth(want)
	d.syncNeighbours(want)
	if err := d.addrs.prune(hostAddrs(want)); err != nil {
		d.log.Warn("applied; some host addresses no longer wanted are still there (retried at the next apply and at stop)", "err", err)
	}
	if !changes.Empty() {
		d.log.Info("configuration applied", "changes", changes.Brief(logChanges))
	}
	return changes, nil
}

// Conns implements api.Backend.
func (d *Daemon) Conns(fn func(loadbalancer.ConnEntry) bool) error { return d.dp.Conns(fn) }

// Stats implements api.Backend.
func (d *Daemon) Stats() (api.Stats, error) {
	drops, err := d.dp.Drops()
	if err != nil {
		return api.Stats{}, err
	}
	verdicts, err := d.dp.Verdicts()
	if err != nil {
		return api.Stats{}, err
	}
	st := api.Stats{Drops: map[string]uint64{}, Verdicts: map[string]uint64{}}
	for r, n := range drops {
		st.Drops[r.String()] = n
	}
	for v, n := range verdicts {
		st.Verdicts[v.String()] = n
	}
	if st.Events, err = d.dp.Events(); err != nil {
		return api.Stats{}, err
	}
	st.ICMPTooBigSent = st.Events["icmp_too_big"]
	if st.ConnTables, err = d.conntable.views(d.dp); err != nil {
		return api.Stats{}, err
	}
	exhausted, err := d.dp.LocalIPExhaustion()
	if err != nil {
		return api.Stats{}, err
	}
	for ip, n := range exhausted {
		st.LocalIPs = append(st.LocalIPs, api.LocalIPStats{Address: ip, NoLport: n})
	}
	slices.SortFunc(st.LocalIPs, func(a, b api.LocalIPStats) int { return a.Address.Compare(b.Address) })
	return d.withRedirectCounts(st)
}

// serveAPI listens on the unix socket (mode 0600, or 0660 with the
// read group) and serves the API to root and, for reading, the group.
func (d *Daemon) serveAPI() (*http.Server, error) {
	access, err := api.NewAccess(d.opts.APIReadGroup)
	if err != nil {
		return nil, &ConfigError{err}
	}
	sock := d.opts.Socket
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return nil, fmt.Errorf("api socket directory: %w", err)
	}
	if err := removeStaleSocket(sock); err != nil {
		return nil, err
	}
	old := unix.Umask(0o077)
	ln, err := net.Listen("unix", sock)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("api socket %s: %w", sock, err)
	}
	if err := access.Share(sock, d.log); err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: access.Guard(api.Handler(d, d.opts.Version, d.log), d.log), ConnContext: api.ConnContext,
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("api server", "err", err)
		}
	}()
	return srv, nil
}
