// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// BenchPort is the destination port of the generated frames (and of
// the balancers' services, which take every port of their VIP).
const BenchPort = 80

// DUT is a device under test: something in the balancer's namespace that
// forwards the client's frames to the reals.
type DUT interface {
	// Name is the name --dut takes.
	Name() string
	// Setup sets the DUT up in the lab.
	Setup(ctx context.Context, e *Env) error
	// Target is where the generator sends: a VIP, or a real for the
	// forwarders (an address routed to one when destinations vary).
	Target(e *Env, v6, varyDst bool) netip.Addr
	// Balances says whether the DUT spreads a VIP's flows over the
	// reals (the destination address must then stay the VIP).
	Balances() bool
	// Alive checks, before each trial, that the DUT still forwards.
	Alive(ctx context.Context, e *Env) error
	// Version describes the DUT for the results.
	Version(e *Env) string
	// Teardown removes the DUT from the lab.
	Teardown(e *Env) error
}

// SYNOpener is a DUT that may tell how it treats TCP segments of no
// known connection.
type SYNOpener interface {
	// OpensOnSYNOnly tells a DUT that forwards a TCP segment of no
	// known connection only if it is a SYN (IPVS's default, xlb's):
	// ACK trials open their flows with SYNs first.
	OpensOnSYNOnly() bool
}

// DropCounter is a DUT that counts its own drops by reason; trials
// record what it dropped, to say where the loss happened.
type DropCounter interface {
	// Drops reads the DUT's drop counters, by reason.
	Drops(ctx context.Context) (map[string]uint64, error)
}

// Forgetter is a DUT that keeps flows, which can forget them all: the
// multi-flow matrix starts each cell on a DUT that holds none, as VSPERF
// starts each test on a fresh switch (a cell of 1M UDP flows would
// otherwise fill a table the next cell's flows find full).
type Forgetter interface {
	// Forget drops every flow the DUT holds; it forwards as before. It
	// reports whether it set the DUT up anew, which then settles again.
	Forget(ctx context.Context, e *Env) (restarted bool, err error)
}

// ModeSwitcher is a DUT attached with XDP, which the throughput
// scenario runs in each XDP mode, as the Arion report does.
type ModeSwitcher interface {
	// SetMode attaches the DUT anew in mode (one of XDPModes).
	SetMode(ctx context.Context, e *Env, mode string) error
}

// XDPModes are the XDP attach modes, native (the default) first.
var XDPModes = []string{"native", "generic"}

// DUTNames are the DUTs --dut accepts, in their default order.
var DUTNames = []string{"xlb", "xdp-fwd", "xdp-fixed", "kernel", "nft"}

// ConnDUTNames are the DUTs the connection scenarios take (xdp-fwd only
// those of the XDP endpoints; the xlb variants and nft-synproxy the cps
// and synflood scenarios').
var ConnDUTNames = []string{"xlb", "nft", "xdp-fwd", "haproxy", "direct", "xlb-synproxy", "xlb-toa", "xlb-proxy-v2", "nft-synproxy"}

// IsXLB tells whether a DUT is the xlb daemon, of any shape.
func IsXLB(d DUT) bool {
	_, ok := d.(*xlbDUT)
	return ok
}

// NewDUT returns the DUT called name among those of the lab itself,
// which frame and connection scenarios share: xlb, kernel, nft, sink and
// direct. The bare XDP forwarders (frames.NewFwdDUT, NewFixedFwdDUT) and haproxy
// (apps.NewHAProxyDUT) live with their scenarios; run.NewDUT knows
// every DUT.
func NewDUT(name string) (DUT, error) {
	switch name {
	case "xlb":
		return NewXLBDUT(DefaultXLBShape), nil
	case "kernel":
		return &kernelDUT{}, nil
	case "nft":
		return &nftDUT{}, nil
	case "sink":
		return sinkDUT{}, nil
	case "direct":
		return directDUT{}, nil
	case "nft-synproxy":
		return &nftSynproxyDUT{}, nil
	}
	return nil, fmt.Errorf("DUT %q: want one of %s, sink, direct or haproxy", name, strings.Join(DUTNames, ", "))
}

// RealTarget is the forwarders' target: the first real, or the block
// routed to it when destinations vary.
func RealTarget(e *Env, v6, varyDst bool) netip.Addr {
	if varyDst {
		return routedTarget(e, v6)
	}
	if v6 {
		return e.Topo.RealAddr6(1)
	}
	return e.Topo.RealAddr(1)
}

// VIPTarget is the balancers' target: the VIP of the family.
func VIPTarget(e *Env, v6, _ bool) netip.Addr {
	if v6 {
		return e.Topo.VIP6()
	}
	return e.Topo.VIP()
}

// xlbDUT is the xlb daemon with port-0 (every port) FullNAT services,
// TCP and UDP, on the VIP and the IPv6 VIP over every real.
type xlbDUT struct {
	shape   XLBShape
	workers []int  // the daemon's worker CPUs (WorkerDUT)
	mode    string // XDP mode; "" is the daemon's default, native
	d       *topo.Daemon
}

// SetMode implements ModeSwitcher: the daemon is restarted with
// xdp_mode set (its connections are lost).
func (x *xlbDUT) SetMode(ctx context.Context, e *Env, mode string) error {
	if err := x.Teardown(e); err != nil {
		return err
	}
	x.mode = mode
	return x.Setup(ctx, e)
}

func (x *xlbDUT) Name() string {
	name, _ := x.shape.variant()
	return WorkersName(name, len(x.workers))
}

// SetWorkers implements WorkerDUT: the daemon's workers.
func (x *xlbDUT) SetWorkers(cpus []int)                    { x.workers = cpus }
func (x *xlbDUT) Workers() []int                           { return x.workers }
func (*xlbDUT) Balances() bool                             { return true }
func (*xlbDUT) OpensOnSYNOnly() bool                       { return true }
func (*xlbDUT) Target(e *Env, v6, varyDst bool) netip.Addr { return VIPTarget(e, v6, varyDst) }
func (x *xlbDUT) Version(e *Env) string {
	table := "the default connection table"
	if x.shape.ConnTable > 0 {
		table = fmt.Sprintf("a table of %d IPv4 connections", x.shape.ConnTable)
	}
	return fmt.Sprintf("xlb %s; services of %d local IPs, %s; %s", XLBVersion(e.Self), x.shape.LocalIPs, x.shape.Scheduler, table) +
		WorkersVersion(x.workers, "xlb's workers: xlb_steer and a cpumap")
}
func (x *xlbDUT) Alive(ctx context.Context, _ *Env) error {
	_, err := x.d.Client().Version(ctx)
	return err
}

// Drops implements DropCounter with xlb's drop counters.
func (x *xlbDUT) Drops(ctx context.Context) (map[string]uint64, error) {
	st, err := x.d.Client().Stats(ctx)
	return st.Drops, err
}

func (x *xlbDUT) Setup(ctx context.Context, e *Env) error {
	t := e.Topo
	var b strings.Builder
	fmt.Fprintf(&b, "interfaces: [%s]\ntimeouts: %s\n", strings.Join(t.LBInterfaces(), ", "),
		cmp.Or(x.shape.Timeouts, "{tcp: 60, tcp_fin: 2, udp: 60}"))
	if x.shape.ConnTable > 0 {
		fmt.Fprintf(&b, "conn_table: {ipv4: %d}\n", x.shape.ConnTable)
	}
	if x.mode != "" {
		fmt.Fprintf(&b, "xdp_mode: %s\n", x.mode)
	}
	if len(x.workers) > 0 {
		fmt.Fprintf(&b, "workers: {cpus: [%s]}\n", cpuList(x.workers))
	}
	b.WriteString("services:\n")
	for _, v6 := range []bool{false, true} {
		vip, lips := t.VIP(), localIPRange(t.LocalIP(), x.shape.LocalIPs)
		if v6 {
			vip, lips = t.VIP6(), localIPRange(t.LocalIP6(), x.shape.LocalIPs)
		}
		for _, proto := range []string{"udp", "tcp"} {
			extra := ""
			if proto == "tcp" {
				_, extra = x.shape.variant()
			}
			fmt.Fprintf(&b, "  - {vip: %q, port: 0, protocol: %s, scheduler: %s%s, local_ips: [%q], reals: [", vip, proto,
				x.shape.Scheduler, extra, lips)
			for i := 1; i <= t.Reals; i++ {
				addr := t.RealAddr(i)
				if v6 {
					addr = t.RealAddr6(i)
				}
				fmt.Fprintf(&b, "{address: %q, port: 0}, ", addr)
			}
			b.WriteString("]}\n")
		}
	}
	if err := t.WriteConfig(b.String()); err != nil {
		return err
	}
	d, err := t.StartDaemon(ctx, e.Self)
	if err != nil {
		return fmt.Errorf("xlb DUT: %w", err)
	}
	x.d = d
	return nil
}

// localIPRange is the range of n local IPs that ends at last, written as
// the configuration takes it (10.0.2.205-254, fd00:0:2::cd-fe).
func localIPRange(last netip.Addr, n int) string {
	first := last
	for i := 1; i < n; i++ {
		first = first.Prev()
	}
	b := last.AsSlice()
	if last.Is4() {
		return fmt.Sprintf("%s-%d", first, b[3])
	}
	return fmt.Sprintf("%s-%x", first, uint16(b[14])<<8|uint16(b[15]))
}

func (x *xlbDUT) Teardown(e *Env) error {
	if x.d == nil {
		return nil
	}
	err := x.d.Stop()
	x.d = nil
	_, _, pins := e.Topo.DaemonFiles()
	_ = os.RemoveAll(pins) // the next run starts without connections
	return err
}

// Forget implements Forgetter: the daemon is restarted without its
// pinned maps, connections and all.
func (x *xlbDUT) Forget(ctx context.Context, e *Env) (bool, error) {
	if err := x.Teardown(e); err != nil {
		return false, err
	}
	return true, x.Setup(ctx, e)
}

// kernelDUT is plain IP forwarding in the balancer (the lab enables it).
type kernelDUT struct{ rps }

func (k *kernelDUT) Name() string                            { return WorkersName("kernel", len(k.cpus)) }
func (kernelDUT) Balances() bool                             { return false }
func (kernelDUT) Target(e *Env, v6, varyDst bool) netip.Addr { return RealTarget(e, v6, varyDst) }
func (k *kernelDUT) Setup(_ context.Context, e *Env) error   { return k.apply(e, true) }
func (k *kernelDUT) Teardown(e *Env) error                   { return k.apply(e, false) }
func (k *kernelDUT) Version(*Env) string {
	return "Linux " + kernelRelease() + WorkersVersion(k.cpus, "RPS")
}
func (kernelDUT) Alive(_ context.Context, e *Env) error { return forwarding(e) }

func forwarding(e *Env) error {
	out, err := e.RunIn(e.Topo.LB(), "sysctl", "-n", "net.ipv4.ip_forward")
	if err != nil || strings.TrimSpace(out) != "1" {
		return fmt.Errorf("IP forwarding is off in %s (%v)", e.Topo.LB(), err)
	}
	return nil
}

// nftDUT is nftables DNAT with numgen round robin and conntrack: what
// people use for a VIP when IPVS is absent.
type nftDUT struct {
	rps
	restore map[string]string // host conntrack limits raised for the run
}

const nftTable = "xlbbench"

func (n *nftDUT) Name() string                            { return WorkersName("nft", len(n.cpus)) }
func (nftDUT) Balances() bool                             { return true }
func (nftDUT) Target(e *Env, v6, varyDst bool) netip.Addr { return VIPTarget(e, v6, varyDst) }

func (n *nftDUT) Version(e *Env) string {
	out, err := e.RunIn(e.Topo.LB(), "nft", "--version")
	if err != nil {
		out = "nft ?"
	}
	return strings.TrimSpace(out) + WorkersVersion(n.cpus, "RPS")
}

func (n *nftDUT) Setup(_ context.Context, e *Env) error {
	t := e.Topo
	var b strings.Builder
	for _, fam := range []struct {
		name string
		vip  netip.Addr
		real func(int) netip.Addr
	}{{"ip", t.VIP(), t.RealAddr}, {"ip6", t.VIP6(), t.RealAddr6}} {
		var m []string
		for i := 1; i <= t.Reals; i++ {
			m = append(m, fmt.Sprintf("%d : %s", i-1, fam.real(i)))
		}
		fmt.Fprintf(&b, "table %s %s {\n  chain prerouting {\n    type nat hook prerouting priority dstnat;\n", fam.name, nftTable)
		fmt.Fprintf(&b, "    %s daddr %s meta l4proto { tcp, udp } dnat to numgen inc mod %d map { %s }\n  }\n}\n",
			fam.name, fam.vip, t.Reals, strings.Join(m, ", "))
	}
	f, err := os.CreateTemp("", "xlb-bench-nft-*.conf")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(b.String()); err != nil {
		return err
	}
	f.Close()
	if _, err = e.RunIn(t.LB(), "nft", "-f", f.Name()); err != nil {
		return err
	}
	if err := n.apply(e, true); err != nil {
		return err
	}
	return n.tuneConntrack(e)
}

func (nftDUT) Alive(_ context.Context, e *Env) error {
	if _, err := e.RunIn(e.Topo.LB(), "nft", "list", "table", "ip", nftTable); err != nil {
		return err
	}
	return forwarding(e)
}

func (n *nftDUT) Teardown(e *Env) error {
	return errors.Join(n.apply(e, false), n.removeTables(e, nftTable))
}

// Forget implements Forgetter: conntrack forgets every flow; the rules
// stay.
func (n *nftDUT) Forget(_ context.Context, e *Env) (bool, error) {
	_, err := e.RunIn(e.Topo.LB(), "conntrack", "-F")
	return false, err
}

// removeTables deletes the DUT's IPv4 and IPv6 tables called table,
// puts the host's conntrack limits back and forgets the flows, so the
// next DUT starts clean.
func (n *nftDUT) removeTables(e *Env, table string) error {
	n.restoreConntrack()
	_, err1 := e.RunIn(e.Topo.LB(), "nft", "delete", "table", "ip", table)
	_, err2 := e.RunIn(e.Topo.LB(), "nft", "delete", "table", "ip6", table)
	_, _ = e.RunIn(e.Topo.LB(), "conntrack", "-F")
	if err1 != nil {
		return err1
	}
	return err2
}

// sinkDUT forwards nothing: a sink on the balancer's interface counts
// the generator's frames where a DUT would receive them. It measures the
// generator and the lab, the ceiling every DUT is under.
type sinkDUT struct{}

func (sinkDUT) Name() string                               { return "sink" }
func (sinkDUT) Balances() bool                             { return false }
func (sinkDUT) Target(e *Env, v6, varyDst bool) netip.Addr { return RealTarget(e, v6, varyDst) }
func (sinkDUT) Version(*Env) string {
	return "bpf/bench/sink.bpf.c on the balancer's l0: the generator's ceiling"
}
func (sinkDUT) Setup(_ context.Context, e *Env) error {
	return e.Sink.Attach(e.Topo.LB(), "l0")
}
func (sinkDUT) Alive(context.Context, *Env) error { return nil } // RunTrial checks the sinks
func (sinkDUT) Teardown(e *Env) error             { return e.Sink.Detach(e.Topo.LB(), "l0") }
