// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/workers"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// NewFwdDUT returns the xdp-fwd DUT: the bare XDP forwarder
// (bpf/bench/fwd.bpf.c), the ceiling of an XDP program that routes.
func NewFwdDUT() bench.DUT { return &fwdDUT{} }

// NewFixedFwdDUT returns the xdp-fixed DUT: a forwarder with a fixed
// next hop per port (MAC rewrite and devmap redirect only), the least an
// XDP hop can cost. It takes complete checksums only: frame scenarios.
func NewFixedFwdDUT() bench.DUT { return &fwdDUT{fixed: true} }

// fwdDUT is the bare XDP forwarder on every interface of the balancer:
// the client's frames in, and the reals' answers back (connection
// scenarios). Fixed, every frame from the client goes to real 1, and
// every frame from a real to the client.
type fwdDUT struct {
	fixed   bool
	objs    fwdObjects
	links   []link.Link
	mode    string // XDP mode; "" is native
	workers []int  // worker CPUs (bench.WorkerDUT)
}

func (f *fwdDUT) Name() string {
	if f.fixed {
		return bench.WorkersName("xdp-fixed", len(f.workers))
	}
	return bench.WorkersName("xdp-fwd", len(f.workers))
}

// SetWorkers implements bench.WorkerDUT: the interfaces run
// xdp_fwd_steer, the workers the forwarder.
func (f *fwdDUT) SetWorkers(cpus []int) { f.workers = cpus }
func (f *fwdDUT) Workers() []int        { return f.workers }
func (*fwdDUT) Balances() bool          { return false }
func (*fwdDUT) Target(e *bench.Env, v6, varyDst bool) netip.Addr {
	return bench.RealTarget(e, v6, varyDst)
}
func (f *fwdDUT) Version(*bench.Env) string {
	w := bench.WorkersVersion(f.workers, "xdp_fwd_steer and a cpumap, as xlb's workers")
	if f.fixed {
		return "bpf/bench/fwd.bpf.c xdp_fwd_fixed (a fixed next hop per port: MAC rewrite + devmap redirect)" + w
	}
	return "bpf/bench/fwd.bpf.c (bpf_fib_lookup + devmap redirect)" + w
}

func (f *fwdDUT) Alive(context.Context, *bench.Env) error {
	if len(f.links) == 0 {
		return fmt.Errorf("xdp-fwd: not attached")
	}
	for _, l := range f.links {
		if _, err := l.Info(); err != nil {
			return err
		}
	}
	return nil
}

func (f *fwdDUT) Setup(_ context.Context, e *bench.Env) error {
	if len(f.workers) > 0 {
		return f.setupWorkers(e)
	}
	if _, err := xdpfrags.LoadAndAssign(loadFwd, &f.objs); err != nil {
		return fmt.Errorf("load xdp-fwd: %w", err)
	}
	return f.attach(e)
}

// fwdWorker is the name of the forwarder loaded as a cpumap program.
const fwdWorker = "xdp_fwd_worker"

// setupWorkers loads the forwarder with its copy for the workers' cpumap
// entries, starts the workers, and attaches the steering program.
func (f *fwdDUT) setupWorkers(e *bench.Env) error {
	prog := fwdProgXdpFwd
	if f.fixed {
		prog = fwdProgXdpFwdFixed
	}
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	var objs struct {
		fwdObjects
		Worker *ebpf.Program `ebpf:"xdp_fwd_worker"`
	}
	load := func() (*ebpf.CollectionSpec, error) {
		spec, err := loadFwd()
		if err == nil {
			err = workers.Prepare(spec, prog, fwdWorker, possible)
		}
		return spec, err
	}
	if _, err := xdpfrags.LoadAndAssign(load, &objs); err != nil {
		return fmt.Errorf("load %s: %w", f.Name(), err)
	}
	f.objs = objs.fwdObjects
	err = workers.Start(f.objs.SteerCpus, f.objs.SteerWorkers, loadbalancer.Workers{CPUs: f.workers}, objs.Worker)
	objs.Worker.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return f.attach(e)
}

// attach attaches the forwarder to every interface of the balancer in
// f's mode.
func (f *fwdDUT) attach(e *bench.Env) error {
	flags := link.XDPDriverMode
	if f.mode == "generic" {
		flags = link.XDPGenericMode
	}
	prog := f.objs.XdpFwd
	if f.fixed {
		if err := f.fixNextHops(e); err != nil {
			return err
		}
		prog = f.objs.XdpFwdFixed
	}
	if len(f.workers) > 0 {
		prog = f.objs.XdpFwdSteer
	}
	return netns.Run(e.Topo.LB(), func() error {
		for _, name := range e.Topo.LBInterfaces() {
			ifc, err := net.InterfaceByName(name)
			if err != nil {
				return err
			}
			if err := f.objs.FwdPorts.Put(uint32(ifc.Index), uint32(ifc.Index)); err != nil {
				return fmt.Errorf("%s devmap %s: %w", f.Name(), name, err)
			}
			l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: flags})
			if err != nil {
				return fmt.Errorf("attach %s to %s: %w", f.Name(), name, err)
			}
			f.links = append(f.links, l)
		}
		return nil
	})
}

// fixNextHops fills fwd_next: the client's port (l0) to real 1's, and
// every real's port to the client's, with the MACs of both ends.
func (f *fwdDUT) fixNextHops(e *bench.Env) error {
	ports := e.Topo.LBInterfaces()
	client, err := ifaceIn(e.Topo.Client(), "c0")
	if err != nil {
		return err
	}
	real1, err := ifaceIn(e.Topo.Real(1), "r0")
	if err != nil {
		return err
	}
	lb := map[string]*net.Interface{}
	for _, name := range ports {
		if lb[name], err = ifaceIn(e.Topo.LB(), name); err != nil {
			return err
		}
	}
	hop := func(out *net.Interface, peer net.HardwareAddr) fwdFwdNextHop {
		h := fwdFwdNextHop{Ifindex: uint32(out.Index)}
		copy(h.Dmac[:], peer)
		copy(h.Smac[:], out.HardwareAddr)
		return h
	}
	for _, name := range ports {
		h := hop(lb["l0"], client.HardwareAddr)
		if name == "l0" {
			h = hop(lb[ports[1]], real1.HardwareAddr)
		}
		if err := f.objs.FwdNext.Put(uint32(lb[name].Index), h); err != nil {
			return fmt.Errorf("xdp-fixed next hop of %s: %w", name, err)
		}
	}
	return nil
}

// ifaceIn is the interface called name in namespace ns.
func ifaceIn(ns, name string) (ifc *net.Interface, err error) {
	err = netns.Run(ns, func() error {
		ifc, err = net.InterfaceByName(name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, ns, err)
	}
	return ifc, nil
}

// SetMode implements bench.ModeSwitcher.
func (f *fwdDUT) SetMode(_ context.Context, e *bench.Env, mode string) error {
	for _, l := range f.links {
		_ = l.Close()
	}
	f.links, f.mode = nil, mode
	return f.attach(e)
}

func (f *fwdDUT) Teardown(*bench.Env) error {
	for _, l := range f.links {
		_ = l.Close()
	}
	f.links = nil
	return f.objs.Close()
}
