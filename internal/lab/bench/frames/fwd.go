// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// NewFwdDUT returns the xdp-fwd DUT: the bare XDP forwarder
// (bpf/bench/fwd.bpf.c), the ceiling of an XDP program that forwards.
func NewFwdDUT() bench.DUT { return &fwdDUT{} }

// fwdDUT is the bare XDP forwarder on every interface of the balancer:
// the client's frames in, and the reals' answers back (connection
// scenarios).
type fwdDUT struct {
	objs  fwdObjects
	links []link.Link
	mode  string // XDP mode; "" is native
}

func (*fwdDUT) Name() string   { return "xdp-fwd" }
func (*fwdDUT) Balances() bool { return false }
func (*fwdDUT) Target(e *bench.Env, v6, varyDst bool) netip.Addr {
	return bench.RealTarget(e, v6, varyDst)
}
func (*fwdDUT) Version(*bench.Env) string {
	return "bpf/bench/fwd.bpf.c (bpf_fib_lookup + devmap redirect)"
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
	if _, err := xdpfrags.LoadAndAssign(loadFwd, &f.objs); err != nil {
		return fmt.Errorf("load xdp-fwd: %w", err)
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
	return netns.Run(e.Topo.LB(), func() error {
		for _, name := range e.Topo.LBInterfaces() {
			ifc, err := net.InterfaceByName(name)
			if err != nil {
				return err
			}
			if err := f.objs.FwdPorts.Put(uint32(ifc.Index), uint32(ifc.Index)); err != nil {
				return fmt.Errorf("xdp-fwd devmap %s: %w", name, err)
			}
			l, err := link.AttachXDP(link.XDPOptions{Program: f.objs.XdpFwd, Interface: ifc.Index, Flags: flags})
			if err != nil {
				return fmt.Errorf("attach xdp-fwd to %s: %w", name, err)
			}
			f.links = append(f.links, l)
		}
		return nil
	})
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
