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
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// DefaultPinPath is the bpffs directory the daemon pins its maps in.
const DefaultPinPath = "/sys/fs/bpf/xlb"

// Options configure Run.
type Options struct {
	ConfigPath  string // YAML configuration (required)
	Socket      string // API unix socket (default api.DefaultSocket)
	MetricsAddr string // Prometheus address, e.g. 127.0.0.1:9468 ("" = off)
	PinPath     string // bpffs directory (default DefaultPinPath; "none" = no pinning)
	Mode        string // native | generic; overrides the file's xdp_mode
	Version     string
	Log         *slog.Logger

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
	addrs hostAddrSet

	health        *health.Monitor
	healthChanges atomic.Uint64 // reals that went up or down

	redirects redirectMonitor // counts frames lost after a redirect (txmon.go)
	neigh     neighbours      // keeps next hops resolved (neigh.go)
}

// Run starts the daemon and serves until ctx ends or SIGINT/SIGTERM. On the
// way out it removes the host addresses it added and detaches; pinned maps
// (and the connections in them) stay for the next start.
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
	d := &Daemon{opts: opts, log: opts.Log}
	d.health = health.NewMonitor(d.onTransition)
	if err := d.start(cfg, want); err != nil {
		d.stop()
		return err
	}
	defer d.stop()

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

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go d.leastConnLoop(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	d.log.Info("xlb daemon running", "config", opts.ConfigPath, "socket", opts.Socket,
		"interfaces", want.Interfaces, "services", len(want.Services), "pin_path", opts.PinPath)
	for {
		select {
		case <-ctx.Done():
			d.log.Info("xlb daemon stopping")
			return nil
		case <-hup:
			d.reload()
		}
	}
}

// start mounts bpffs, loads the data path, attaches it, applies the
// configuration and takes the host addresses.
func (d *Daemon) start(cfg *config.Config, want *config.Desired) error {
	pin := d.opts.PinPath
	if pin == "none" {
		pin = ""
	} else if err := ensureBPFFS(pin); err != nil {
		return err
	}
	dp, err := datapath.Load(datapath.Options{PinPath: pin})
	if err != nil {
		return err
	}
	d.dp = dp
	for _, ifname := range want.Interfaces {
		if err := dp.Attach(ifname, want.Mode); err != nil {
			return err
		}
	}
	d.startRedirectMonitor(want.Interfaces)
	d.startNeighbours(want.Interfaces)
	// Pinned maps from a previous run hold its services: start from what
	// is there, so unchanged services and reals keep their ids (and
	// connections) and only the difference is applied.
	found, err := apply.Observed(dp)
	if err != nil {
		return fmt.Errorf("read the pinned data path: %w", err)
	}
	if n := len(found.Services); n > 0 {
		d.log.Info("pinned maps hold a previous run's services; applying the difference", "services", n)
	}
	changes, err := apply.Transition(dp, found, want)
	if err != nil {
		return err
	}
	if !changes.Empty() && len(found.Services) > 0 {
		d.log.Info("configuration applied", "changes", changes.String())
	}
	d.cfg, d.cur = cfg, want
	d.syncHealth(want)
	d.syncNeighbours(want)
	d.addrs.ifaces = want.Interfaces
	return d.addrs.sync(hostAddrs(want))
}

func (d *Daemon) stop() {
	d.health.Close()
	d.stopRedirectMonitor()
	d.stopNeighbours()
	if err := d.addrs.sync(nil); err != nil {
		d.log.Warn("remove host addresses", "err", err)
	}
	if d.dp != nil {
		if err := d.dp.Close(); err != nil {
			d.log.Warn("detach", "err", err)
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

// ensureBPFFS makes dir on a bpffs, mounting one at /sys/fs/bpf if the
// directory's file system is not bpffs.
func ensureBPFFS(dir string) error {
	var st unix.Statfs_t
	parent := filepath.Dir(dir)
	if err := unix.Statfs(parent, &st); err != nil || st.Type != unix.BPF_FS_MAGIC {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("bpffs at %s: %w", parent, err)
		}
		if err := unix.Mount("bpf", parent, "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mount bpffs at %s: %w", parent, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin directory %s: %w", dir, err)
	}
	return nil
}

// reload re-reads the configuration file (SIGHUP) and applies it.
func (d *Daemon) reload() {
	cfg, err := readConfig(d.opts.ConfigPath)
	if err == nil {
		_, err = d.Apply(cfg)
	}
	if err != nil {
		d.log.Error("reload refused, configuration unchanged", "config", d.opts.ConfigPath, "err", err)
	}
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

// Config implements api.Backend: a deep copy of the configuration in force.
func (d *Daemon) Config() *config.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Clone()
}

// Apply implements api.Backend.
func (d *Daemon) Apply(cfg *config.Config) (config.Changes, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.apply(cfg)
}

// Update implements api.Backend.
func (d *Daemon) Update(edit func(cfg *config.Config) error) (config.Changes, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cfg := d.cfg.Clone()
	if err := edit(cfg); err != nil {
		return config.Changes{}, err
	}
	return d.apply(cfg)
}

// apply moves the data path and the host addresses to cfg; d.mu is held.
func (d *Daemon) apply(cfg *config.Config) (config.Changes, error) {
	want, changes, err := apply.Config(d.dp, d.cur, cfg)
	if err != nil {
		return changes, err
	}
	d.cfg, d.cur = cfg.Clone(), want
	d.syncHealth(want)
	d.syncNeighbours(want)
	if err := d.addrs.sync(hostAddrs(want)); err != nil {
		return changes, fmt.Errorf("applied, but host addresses: %w", err)
	}
	if !changes.Empty() {
		d.log.Info("configuration applied", "changes", changes.String())
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
	if st.ICMPTooBigSent, err = d.dp.ICMPTooBigSent(); err != nil {
		return api.Stats{}, err
	}
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
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale api socket: %w", err)
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
