// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/workers"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// Options configure Load. The zero value is valid: no pinning, default
// table sizes, the local port range split over every possible CPU.
type Options struct {
	// PinPath is a bpffs directory where the maps are pinned by name and
	// found again by the next Load ("" disables pinning).
	PinPath string
	// Conns4 and Conns6 size the IPv4 and IPv6 connection tables, in
	// connections (0 = the object's default, DefaultConns4 and
	// DefaultConns6). A pinned table of another size is a *ResizeError
	// (replaced with DropIncompatible), tables the machine's available
	// memory cannot hold a *MemoryError.
	Conns4 uint32
	Conns6 uint32
	// CPUs is the number of CPUs the local port range is split over
	// (0 = every possible CPU). Tests set 1 to make allocation predictable.
	CPUs int
	// DropIncompatible replaces pinned maps whose layout differs from
	// this build's (see LayoutError) instead of refusing to load: their
	// contents are lost, connection tables included.
	DropIncompatible bool
	// Capacities size the maps indexed by service, real and local IP id
	// (zero: the object's sizes). Pinned maps of another capacity are a
	// *CapacityError (replaced with DropIncompatible, with every other
	// pinned map).
	Capacities Capacities
	// TimeStages loads a program that times the stages of each new
	// connection (NewConnStages): for xlb bench datapath only, as
	// every new connection then reads the clock seven times.
	TimeStages bool
	// SingleBuffer loads the program without multi-buffer support even
	// where the kernel has it, as on a kernel older than 5.18: frames
	// must then fit in one buffer (SingleBufferMTU).
	SingleBuffer bool
	// Workers, when it has CPUs, runs the program on those CPUs behind
	// the steering program (workers.go).
	Workers loadbalancer.Workers
}

// Datapath is a loaded xlb XDP program with its maps.
type Datapath struct {
	objs    xlbObjects
	cpus    int
	pinPath string
	links   map[string]link.Link
	dropped []string // pinned maps replaced for another layout
	frags   bool     // the program takes frames of several buffers
	workers []int    // the worker CPUs (workers.go)

	mu       sync.Mutex
	settings loadbalancer.Settings
	reg      registry
	// unresolved are the real addresses whose next hop is not resolved
	// (SetUnresolved); a real at one of them goes in out of scheduling.
	unresolved map[netip.Addr]bool
	// peerLocalIPs are the other nodes' local IPs (SetPeerLocalIPs).
	peerLocalIPs map[netip.Addr]bool
	// batching counts the open Batch calls; pend is what the changes
	// since the last settle deferred, and emptyTable the schedule table
	// of removed services (batch.go).
	batching   int
	pend       pending
	emptyTable *ebpf.Map

	ctMu  sync.Mutex  // orders the control plane's ct_stats writes (conntable.go)
	ct    [2]*ctTable // the IPv4 and IPv6 connection tables, mapped
	conns [2]uint32   // the connections they are sized for
}

// The connection tables' sizes when Options leave them zero, in
// connections.
const (
	DefaultConns4 = loadbalancer.DefaultIPv4Conns
	DefaultConns6 = loadbalancer.DefaultIPv6Conns
)

// Load loads the data path into the kernel. With Options.PinPath set, maps
// already pinned there are reused, connections and counters included, if
// their layout stamp matches this build's (else a *LayoutError); Attach
// then takes over the links pinned there.
func Load(opts Options) (*Datapath, error) {
	spec, err := loadXlb()
	if err != nil {
		return nil, fmt.Errorf("load xlb object: %w", err)
	}
	conns4, conns6 := cmp.Or(opts.Conns4, DefaultConns4), cmp.Or(opts.Conns6, DefaultConns6)
	spec.Maps[xlbMapCt4].MaxEntries = CtSlots(conns4) + ctProbe
	spec.Maps[xlbMapCt6].MaxEntries = CtSlots(conns6) + ctProbe
	setCapacities(spec, opts.Capacities)
	if opts.PinPath == "" {
		for _, m := range spec.Maps {
			m.Pinning = ebpf.PinNone
		}
	}
	cpus := opts.CPUs
	if cpus <= 0 {
		if cpus, err = ebpf.PossibleCPU(); err != nil {
			return nil, fmt.Errorf("count possible CPUs: %w", err)
		}
	}

	if opts.TimeStages {
		if err := spec.Variables[xlbVarXlbTimeStages].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("time the stages: %w", err)
		}
	}
	d := &Datapath{cpus: cpus, pinPath: opts.PinPath, links: map[string]link.Link{}, conns: [2]uint32{conns4, conns6}}
	if opts.SingleBuffer {
		err = xdpfrags.Single(spec)
	} else {
		d.frags, err = xdpfrags.Prepare(spec)
	}
	if err != nil {
		return nil, err
	}
	if err := setKernelFeatures(spec); err != nil {
		return nil, err
	}
	if err := checkTables(spec, opts.PinPath, d.conns, opts.DropIncompatible); err != nil {
		return nil, err
	}
	if opts.PinPath != "" {
		if err := checkCapacities(spec, opts.PinPath, opts.DropIncompatible); err != nil {
			return nil, err
		}
		if d.dropped, err = checkLayout(spec, opts.PinPath, opts.DropIncompatible); err != nil {
			return nil, err
		}
	}
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("count possible CPUs: %w", err)
	}
	if err := opts.Workers.Check(possible); err != nil {
		return nil, err
	}
	var loaded any = &d.objs
	var withWorkers workerObjects
	if len(opts.Workers.CPUs) > 0 {
		if err := workers.Prepare(spec, xlbProgXlbXdp, workerProgram, possible); err != nil {
			return nil, err
		}
		loaded = &withWorkers
	}
	collOpts := &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: opts.PinPath}}
	if err := spec.LoadAndAssign(loaded, collOpts); err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("load xlb program: %+v", verr)
		}
		if errors.Is(err, ebpf.ErrMapIncompatible) {
			// a size or type the stamp did not know (a table resized)
			return nil, fmt.Errorf("%w (%w)", &LayoutError{PinPath: opts.PinPath, Maps: []string{"?"}}, err)
		}
		return nil, fmt.Errorf("load xlb program: %w", err)
	}
	if withWorkers.XlbWorker != nil {
		d.objs = withWorkers.xlbObjects
		d.workers = slices.Clone(opts.Workers.CPUs)
		// the cpumap entries hold the program; the handle goes
		err := workers.Start(d.objs.SteerCpus, d.objs.SteerWorkers, opts.Workers, withWorkers.XlbWorker)
		withWorkers.XlbWorker.Close()
		if err != nil {
			d.objs.Close()
			return nil, err
		}
	}
	if opts.PinPath != "" {
		if err := writeStamps(spec, opts.PinPath); err != nil {
			d.objs.Close()
			return nil, err
		}
	}
	for i, m := range []*ebpf.Map{d.objs.Ct4, d.objs.Ct6} {
		if d.ct[i], err = openCtTable(m, i == 1); err != nil {
			d.closeObjects()
			return nil, err
		}
	}
	d.settings = loadbalancer.DefaultSettings()
	if err := d.writeSettings(d.settings); err != nil {
		d.closeObjects()
		return nil, err
	}
	d.reg.init(d.objs.SvcVips.MaxEntries(), d.objs.Reals.MaxEntries(), d.objs.Laddrs.MaxEntries())
	if opts.PinPath == "" {
		return d, nil // fresh maps: nothing to read back
	}
	if err := d.rebuildRegistry(); err != nil {
		d.closeObjects()
		return nil, fmt.Errorf("read back pinned maps: %w", err)
	}
	return d, nil
}

// Close releases the objects. Without a pin path the program is detached
// from every interface; with one, pinned links and maps stay and the data
// path keeps forwarding until the next Load takes it over or Remove.
func (d *Datapath) Close() error {
	var errs []error
	for ifname, l := range d.links {
		if d.pinPath == "" {
			errs = append(errs, d.Detach(ifname))
			continue
		}
		errs = append(errs, l.Close())
		delete(d.links, ifname)
	}
	errs = append(errs, d.closeObjects())
	return errors.Join(errs...)
}

// closeObjects unmaps the connection tables and releases the objects.
func (d *Datapath) closeObjects() error {
	var errs []error
	for _, t := range d.ct {
		errs = append(errs, t.close())
	}
	for _, t := range d.pend.tables {
		if t != d.emptyTable {
			errs = append(errs, t.Close())
		}
	}
	if d.emptyTable != nil {
		errs = append(errs, d.emptyTable.Close())
	}
	return errors.Join(append(errs, d.objs.Close())...)
}

// Remove detaches the program from every interface, releases the objects
// and removes everything pinned under the pin path: what a stop leaves
// behind is nothing.
func (d *Datapath) Remove() error {
	var errs []error
	for ifname := range d.links {
		errs = append(errs, d.Detach(ifname))
	}
	errs = append(errs, d.closeObjects())
	if d.pinPath != "" {
		errs = append(errs, RemovePinned(d.pinPath))
	}
	return errors.Join(errs...)
}

// DroppedMaps names the pinned maps Load replaced for their layout
// (Options.DropIncompatible).
func (d *Datapath) DroppedMaps() []string { return d.dropped }

// Program returns the XDP program, for BPF_PROG_RUN and for callers that
// attach it themselves.
func (d *Datapath) Program() *ebpf.Program { return d.objs.XlbXdp }

// AddRedirectTarget lets the data path redirect packets to an interface
// (attached ones are added by Attach).
func (d *Datapath) AddRedirectTarget(ifindex int) error {
	idx := uint32(ifindex)
	if err := d.objs.TxPorts.Put(idx, idx); err != nil {
		return fmt.Errorf("add ifindex %d to tx_ports: %w", ifindex, err)
	}
	return nil
}

// ConnTableSize is the size of one connection table.
type ConnTableSize struct {
	Family string `json:"family"` // FamilyIPv4 or FamilyIPv6
	Conns  uint32 `json:"connections"`
	Slots  uint32 `json:"slots"` // two per connection, 5/8 full at most
	Bytes  uint64 `json:"bytes"` // the memory its slots take
}

// ConnTableSizes are the sizes of the IPv4 and the IPv6 table.
func (d *Datapath) ConnTableSizes() []ConnTableSize {
	out := make([]ConnTableSize, len(d.ct))
	for i, t := range d.ct {
		out[i] = ConnTableSize{Family: ctFamilies[i], Conns: d.conns[i], Slots: t.len(), Bytes: t.bytes()}
	}
	return out
}

// CPUs is the number of CPUs the local port range is split over.
func (d *Datapath) CPUs() int { return d.cpus }

// MultiBuffer tells whether the program takes frames of several buffers
// (XDP multi-buffer, xdp.frags): then native mode carries any MTU the
// driver allows, else SingleBufferMTU at most.
func (d *Datapath) MultiBuffer() bool { return d.frags }
