// SPDX-License-Identifier: Apache-2.0

package progns

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// The namespace's addresses.
var (
	VIP4      = netip.MustParseAddr("10.0.0.10")
	VIP6      = netip.MustParseAddr("fd00::10")
	Client4   = netip.MustParseAddr("10.0.1.10")
	Client6   = netip.MustParseAddr("fd00:1::10")
	LocalIP4  = netip.MustParseAddr("10.0.2.254") // on the real side
	LocalIP6  = netip.MustParseAddr("fd00:2::fe")
	ClientMAC = net.HardwareAddr{0x02, 0, 0, 0, 1, 0x10}
	RouterMAC = net.HardwareAddr{0x02, 0, 0, 0, 9, 0x99} // the client's next hop towards the VIP
)

// The balancer's interfaces: ClientIf towards the client, RealIf towards
// the reals; each is a veth whose peer is the name with a "p" appended.
const (
	ClientIf = "xc"
	RealIf   = "xr"
)

// NumReals is how many reals have neighbour entries.
const NumReals = 10

// RealAddr returns the address of real n (1-based) of a family.
func RealAddr(v6 bool, n int) netip.Addr {
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd00:2::%x", n))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.0.2.%d", n))
}

// RealMAC returns the MAC address of real n.
func RealMAC(n int) net.HardwareAddr { return net.HardwareAddr{0x02, 0, 0, 0, 2, byte(n)} }

// An Env is the namespace and the thread that runs in it.
type Env struct {
	Name string // the namespace
	// Client and Real are the interfaces ClientIf and RealIf.
	Client, Real *net.Interface
	worker       *netns.Worker
}

// New builds namespace name and starts its thread. Close removes both;
// on error nothing is left.
func New(name string) (e *Env, err error) {
	if err := netns.IP("netns", "add", name); err != nil {
		return nil, err
	}
	built := &Env{Name: name}
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	cmds := [][]string{
		{"link", "add", ClientIf, "type", "veth", "peer", "name", ClientIf + "p"},
		{"link", "add", RealIf, "type", "veth", "peer", "name", RealIf + "p"},
		{"link", "set", "lo", "up"}, {"link", "set", ClientIf, "up"}, {"link", "set", ClientIf + "p", "up"},
		{"link", "set", RealIf, "up"}, {"link", "set", RealIf + "p", "up"},
		{"addr", "add", "10.0.1.1/24", "dev", ClientIf},
		{"addr", "add", "fd00:1::1/64", "dev", ClientIf, "nodad"},
		{"addr", "add", LocalIP4.String() + "/24", "dev", RealIf},
		{"addr", "add", LocalIP6.String() + "/64", "dev", RealIf, "nodad"},
		{"neigh", "add", Client4.String(), "lladdr", ClientMAC.String(), "dev", ClientIf, "nud", "permanent"},
		{"neigh", "add", Client6.String(), "lladdr", ClientMAC.String(), "dev", ClientIf, "nud", "permanent"},
	}
	for n := 1; n <= NumReals; n++ {
		for _, v6 := range []bool{false, true} {
			cmds = append(cmds, []string{"neigh", "add", RealAddr(v6, n).String(), "lladdr", RealMAC(n).String(), "dev", RealIf, "nud", "permanent"})
		}
	}
	for _, c := range cmds {
		if err := built.IP(c...); err != nil {
			return nil, err
		}
	}
	if err := netns.Sysctl(name, "net.ipv4.conf.all.forwarding=1", "net.ipv6.conf.all.forwarding=1"); err != nil {
		return nil, err
	}
	if built.worker, err = netns.StartWorker(name, 0); err != nil {
		return nil, err
	}
	built.Do(func() {
		built.Client, err = net.InterfaceByName(ClientIf)
		if err == nil {
			built.Real, err = net.InterfaceByName(RealIf)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("find the interfaces of namespace %s: %w", name, err)
	}
	return built, nil
}

// Close stops the thread and removes the namespace; closing again does
// nothing.
func (e *Env) Close() {
	if e.worker != nil {
		e.worker.Stop()
		e.worker = nil
	}
	if e.Name != "" {
		_ = netns.IP("netns", "del", e.Name)
		e.Name = ""
	}
}

// Do runs fn on the namespace's thread and waits for it.
func (e *Env) Do(fn func()) { e.worker.Do(fn) }

// IP runs ip(8) in the namespace.
func (e *Env) IP(args ...string) error { return netns.IPIn(e.Name, args...) }

// Run passes one frame through prog with BPF_PROG_RUN on the namespace's
// thread and returns the program's return value and the frame as it
// left it. With ingress set, the program sees the frame come in on that
// interface (else on the kernel's default, the loopback device).
func (e *Env) Run(prog *ebpf.Program, frame []byte, ingress *net.Interface) (uint32, []byte, error) {
	return e.RunSplit(prog, frame, ingress, 0)
}

// RunSplit is Run with the frame in several buffers, as XDP multi-buffer
// hands it to an xdp.frags program: the first linear bytes in one, the
// rest in page-sized ones. With linear 0 (or the frame's length or
// more), or for a single-buffer
// program, the kernel puts as much as a page holds (3520 bytes with 4
// KiB pages) in the first buffer. A frame longer than that is refused for
// a single-buffer program.
func (e *Env) RunSplit(prog *ebpf.Program, frame []byte, ingress *net.Interface, linear int) (uint32, []byte, error) {
	var (
		ret uint32
		out = make([]byte, len(frame)+256)
		err error
	)
	if linear <= 0 || linear > len(frame) {
		linear = len(frame)
	}
	e.Do(func() {
		opts := &ebpf.RunOptions{Data: frame, DataOut: out}
		if ingress != nil || linear != len(frame) {
			// struct xdp_md: data, data_end, data_meta, ingress_ifindex,
			// rx_queue_index, egress_ifindex; a data_end beyond what the
			// first buffer holds means "as much as it holds"
			ctx := [6]uint32{1: uint32(linear)}
			if ingress != nil {
				ctx[3] = uint32(ingress.Index)
			}
			opts.Context = ctx
		}
		ret, err = prog.Run(opts)
		out = opts.DataOut
	})
	return ret, out, err
}
