// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/hoststate"
)

// start loads the data path over what an earlier run pinned (maps, links
// and the record of its host changes), applies the configuration to the
// maps, then attaches: a pinned link gets the new program atomically, so
// a restart or the start after a crash loses no packet. Last it takes
// the host addresses, taking over those the earlier run recorded.
func (d *Daemon) start(cfg *config.Config, want *config.Desired) error {
	pin := d.opts.PinPath
	if pin == "none" {
		pin = ""
	} else if err := ensureBPFFS(pin); err != nil {
		return err
	}
	d.tookOver = pin != "" && pinnedBefore(pin)
	rec, err := hoststate.Open(pin)
	if err != nil {
		return err
	}
	d.record = rec
	d.addrs = hostAddrSet{ifaces: want.Interfaces, record: rec}
	dp, err := datapath.Load(datapath.Options{PinPath: pin, DropIncompatible: d.opts.DropIncompatible,
		Conns4: want.ConnTable.IPv4, Conns6: want.ConnTable.IPv6, Workers: want.Workers, Capacities: datapath.Capacities{
			Services: uint32(want.ServiceCapacity), Reals: uint32(want.RealCapacity), LocalIPs: uint32(want.LocalIPCapacity)}})
	if err != nil {
		return err
	}
	d.dp = dp
	if dp.MultiBuffer() {
		d.log.Info("data path: multi-buffer XDP (xdp.frags), jumbo frames in native mode where the driver carries them")
	} else {
		d.log.Info("data path: single-buffer XDP (this kernel has none with frags)", "largest native MTU", datapath.SingleBufferMTU())
	}
	if cpus := dp.WorkerCPUs(); len(cpus) > 0 {
		d.log.Info("data path: workers, each flow steered to one of them", "cpus", cpus)
	}
	for _, t := range dp.ConnTableSizes() {
		d.log.Info("connection table", "family", t.Family, "connections", t.Conns,
			"memory", fmt.Sprintf("%.1f MiB", float64(t.Bytes)/(1<<20)))
	}
	// checked against the loaded maps and the host (its own addresses, not
	// those an earlier run recorded) before any change
	if want, err = apply.Check(dp, cfg, d.hostOwns()); err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", d.opts.ConfigPath, err)}
	}
	if dropped := dp.DroppedMaps(); len(dropped) > 0 {
		d.log.Warn("pinned maps of another layout replaced (--drop-incompatible-maps): what they held is lost", "maps", dropped)
	}
	for _, ifname := range want.Interfaces {
		ifi, err := net.InterfaceByName(ifname)
		if err == nil {
			err = dp.AddRedirectTarget(ifi.Index)
		}
		if err != nil {
			return fmt.Errorf("interface %s: %w", ifname, err)
		}
	}
	// Pinned maps from a previous run hold its services: start from what
	// is there, so unchanged services and reals keep their ids (and
	// connections) and only the difference is applied. An earlier run's
	// program may still forward with these maps: the next hops of reals
	// it does not have are resolved before they go in.
	found, err := apply.Observed(dp)
	if err != nil {
		return fmt.Errorf("read the pinned data path: %w", err)
	}
	d.startNeighbours(want.Interfaces)
	d.awaitNeighbours(want)
	d.checkNextHops(want)
	if n := len(found.Services); n > 0 {
		d.log.Info("pinned maps hold a previous run's services; applying the difference", "services", n)
	}
	changes, err := apply.Transition(dp, found, want)
	if err != nil {
		return err
	}
	if !changes.Empty() && len(found.Services) > 0 {
		d.log.Info("configuration applied", "changes", changes.Brief(logChanges))
	}
	d.cfg, d.cur = cfg, want
	d.fileRevision = d.rev.Current()
	if err := d.attach(want); err != nil {
		return err
	}
	d.startRedirectMonitor(want.Interfaces)
	d.checkHost()
	d.syncHealth(want)
	d.syncNeighbours(want)
	return d.addrs.sync(hostAddrs(want))
}

// attach attaches (or takes over) every configured interface and detaches
// the links an earlier run pinned for interfaces no longer configured.
func (d *Daemon) attach(want *config.Desired) error {
	for _, ifname := range want.Interfaces {
		if err := d.dp.Attach(ifname, want.Mode); err != nil {
			return err
		}
	}
	if d.opts.PinPath == "none" {
		return nil
	}
	pinned, err := datapath.PinnedLinks(d.opts.PinPath)
	if err != nil {
		return err
	}
	for _, ifname := range pinned {
		if slices.Contains(want.Interfaces, ifname) {
			continue
		}
		d.log.Info("detaching from an interface no longer configured", "interface", ifname)
		if err := d.dp.DetachPinned(ifname); err != nil {
			return err
		}
	}
	return nil
}

// pinnedBefore reports whether pin holds an earlier run's data path.
func pinnedBefore(pin string) bool {
	entries, err := os.ReadDir(pin)
	return err == nil && len(entries) > 0
}

// stop ends the daemon. With remove (SIGTERM, SIGINT) it removes the
// neighbour entries and host addresses it added, detaches and removes the
// pins: nothing of xlb is left. Without (a hand-over) it only lets go:
// the data path keeps forwarding and the next daemon takes it over.
func (d *Daemon) stop(remove bool) {
	d.health.Close()
	d.stopRedirectMonitor()
	if remove && d.node.speaker != nil {
		// the data path goes: the routers must not keep its routes for
		// a graceful restart (a Cease ends that)
		d.node.speaker.Stop()
	}
	if !remove {
		d.releaseNeighbours()
		if d.dp != nil {
			if err := d.dp.Close(); err != nil {
				d.log.Warn("release the data path", "err", err)
			}
		}
		if d.record != nil {
			d.record.Close()
		}
		return
	}
	d.stopNeighbours()
	if d.record != nil {
		if err := d.addrs.prune(nil); err != nil {
			d.log.Warn("remove host addresses", "err", err)
		}
		d.record.Close()
	}
	if d.dp != nil {
		if err := d.dp.Remove(); err != nil {
			d.log.Warn("remove the data path", "err", err)
		}
	}
}

// abort ends a start that failed: a data path an earlier run left
// forwarding keeps forwarding (with whatever the failed start changed in
// its maps); one this start created is removed.
func (d *Daemon) abort() {
	d.stop(!d.tookOver)
	if d.tookOver {
		d.log.Warn("start failed: the earlier run's data path is left forwarding")
	}
}

// bpffsRoot is where bpffs is mounted by convention.
const bpffsRoot = "/sys/fs/bpf"

// ensureBPFFS makes the pin directory dir, which must be on a bpffs: its
// parent is on one, or dir is under /sys/fs/bpf, where a bpffs is mounted
// if there is none. Any other path is refused: the daemon removes the
// directory and everything in it at stop.
func ensureBPFFS(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("pin path %q: want an absolute path on bpffs, e.g. %s/xlb", dir, bpffsRoot)
	}
	dir = filepath.Clean(dir)
	if datapath.OnBPFFS(filepath.Dir(dir)) != nil {
		if !strings.HasPrefix(dir, bpffsRoot+"/") {
			return fmt.Errorf("pin path %s: its parent is not on a bpf file system; use a directory under %s", dir, bpffsRoot)
		}
		if datapath.OnBPFFS(bpffsRoot) != nil {
			if err := os.MkdirAll(bpffsRoot, 0o700); err != nil {
				return fmt.Errorf("bpffs at %s: %w", bpffsRoot, err)
			}
			if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
				return fmt.Errorf("mount bpffs at %s: %w", bpffsRoot, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin directory %s: %w", dir, err)
	}
	return datapath.OnBPFFS(dir)
}

// lockDaemon takes the lock next to the API socket that only one daemon
// holds at a time (the kernel releases it when the process dies, however
// it dies), and returns its release.
func lockDaemon(sock string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return nil, fmt.Errorf("api socket directory: %w", err)
	}
	path := sock + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another xlb daemon is running (it holds %s)", path)
		}
		return nil, fmt.Errorf("daemon lock %s: %w", path, err)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}

// removeStaleSocket removes what a dead daemon left at the socket path.
// Only a socket is removed (the lock says no daemon is serving on it).
func removeStaleSocket(sock string) error {
	st, err := os.Lstat(sock)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("api socket %s: %w", sock, err)
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("api socket %s: the path exists and is not a socket; refusing to remove it", sock)
	}
	if err := os.Remove(sock); err != nil {
		return fmt.Errorf("remove stale api socket: %w", err)
	}
	return nil
}
