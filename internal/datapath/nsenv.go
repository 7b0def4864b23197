// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// An nsEnv is a data path loaded beside a network namespace built for
// BPF_PROG_RUN: the balancer's client-side interface (xc) and real-side
// interface (xr), with permanent neighbours for the client and the reals,
// so that bpf_fib_lookup resolves every destination without sending
// anything. Every run happens on one thread inside the namespace, pinned
// to CPU 0. The tests and the per-packet cost measurement use it.
type nsEnv struct {
	work     chan func()
	dp       *Datapath
	ns       string
	clientIf *net.Interface
	realIf   *net.Interface
	// ingress, when set, is the interface BPF_PROG_RUN says frames came
	// in on (else the kernel's default, the loopback device)
	ingress *net.Interface
}

// The namespace's addresses.
var (
	vip4      = netip.MustParseAddr("10.0.0.10")
	vip6      = netip.MustParseAddr("fd00::10")
	client4   = netip.MustParseAddr("10.0.1.10")
	client6   = netip.MustParseAddr("fd00:1::10")
	laddr4    = netip.MustParseAddr("10.0.2.254")
	laddr6    = netip.MustParseAddr("fd00:2::fe")
	clientMAC = net.HardwareAddr{0x02, 0, 0, 0, 1, 0x10}
	routerMAC = net.HardwareAddr{0x02, 0, 0, 0, 9, 0x99} // the client's next hop towards the VIP
)

// numNSReals is how many reals have neighbour entries.
const numNSReals = 10

// realAddr returns the address of real n (1-based) of a family.
func realAddr(v6 bool, n int) netip.Addr {
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd00:2::%x", n))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.0.2.%d", n))
}

func realMAC(n int) net.HardwareAddr { return net.HardwareAddr{0x02, 0, 0, 0, 2, byte(n)} }

func ipIn(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %w: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

// newNSEnv builds namespace ns and loads a data path with opts (one CPU's
// port range unless opts say otherwise). Close removes both; on error
// nothing is left.
func newNSEnv(ns string, opts Options) (e *nsEnv, err error) {
	if opts.CPUs == 0 {
		opts.CPUs = 1
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %w: %s", ns, err, out)
	}
	built := &nsEnv{ns: ns}
	e = built
	defer func() {
		if err != nil {
			built.Close() // e is nil by then
		}
	}()
	cmds := [][]string{
		{"link", "add", "xc", "type", "veth", "peer", "name", "xcp"},
		{"link", "add", "xr", "type", "veth", "peer", "name", "xrp"},
		{"link", "set", "lo", "up"}, {"link", "set", "xc", "up"}, {"link", "set", "xcp", "up"},
		{"link", "set", "xr", "up"}, {"link", "set", "xrp", "up"},
		{"addr", "add", "10.0.1.1/24", "dev", "xc"},
		{"addr", "add", "fd00:1::1/64", "dev", "xc", "nodad"},
		{"addr", "add", laddr4.String() + "/24", "dev", "xr"},
		{"addr", "add", laddr6.String() + "/64", "dev", "xr", "nodad"},
		{"neigh", "add", client4.String(), "lladdr", clientMAC.String(), "dev", "xc", "nud", "permanent"},
		{"neigh", "add", client6.String(), "lladdr", clientMAC.String(), "dev", "xc", "nud", "permanent"},
	}
	for n := 1; n <= numNSReals; n++ {
		for _, v6 := range []bool{false, true} {
			cmds = append(cmds, []string{"neigh", "add", realAddr(v6, n).String(), "lladdr", realMAC(n).String(), "dev", "xr", "nud", "permanent"})
		}
	}
	for _, c := range cmds {
		if err := ipIn(ns, c...); err != nil {
			return nil, err
		}
	}
	for _, s := range []string{"net.ipv4.conf.all.forwarding=1", "net.ipv6.conf.all.forwarding=1"} {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", s).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("sysctl %s in %s: %w: %s", s, ns, err, out)
		}
	}
	if e.dp, err = Load(opts); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := e.startWorker(); err != nil {
		return nil, fmt.Errorf("enter namespace %s: %w", ns, err)
	}
	e.inNS(func() {
		e.clientIf, err = net.InterfaceByName("xc")
		if err == nil {
			e.realIf, err = net.InterfaceByName("xr")
		}
	})
	if err != nil {
		return nil, fmt.Errorf("find the namespace's interfaces: %w", err)
	}
	for _, ifc := range []*net.Interface{e.clientIf, e.realIf} {
		// devmap entries name interfaces of the updating thread's namespace
		e.inNS(func() { err = e.dp.AddRedirectTarget(ifc.Index) })
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close stops the worker, releases the data path and removes the
// namespace; closing again does nothing.
func (e *nsEnv) Close() {
	if e.work != nil {
		close(e.work)
		e.work = nil
	}
	if e.dp != nil {
		e.dp.Close()
		e.dp = nil
	}
	if e.ns != "" {
		_ = exec.Command("ip", "netns", "del", e.ns).Run()
		e.ns = ""
	}
}

// startWorker starts the goroutine that runs every BPF_PROG_RUN on a
// thread inside the namespace, pinned to CPU 0 so per-CPU cursors and
// port slices are those of one CPU. The thread stays locked when the
// worker ends, so Go discards it instead of reusing a thread that is in
// another namespace.
func (e *nsEnv) startWorker() error {
	e.work = make(chan func())
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+e.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err == nil {
			var cpus unix.CPUSet
			cpus.Set(0)
			err = unix.SchedSetaffinity(0, &cpus)
		}
		ready <- err
		if err != nil {
			return
		}
		for fn := range e.work {
			fn()
		}
	}()
	if err := <-ready; err != nil {
		e.work = nil
		return err
	}
	return nil
}

// inNS runs fn on the worker thread and waits for it.
func (e *nsEnv) inNS(fn func()) {
	done := make(chan struct{})
	e.work <- func() { fn(); close(done) }
	<-done
}

// runOnce passes one frame through the program with BPF_PROG_RUN.
func (e *nsEnv) runOnce(frame []byte) (Verdict, []byte, error) {
	var (
		ret uint32
		out = make([]byte, len(frame)+256)
		err error
	)
	e.inNS(func() {
		opts := &ebpf.RunOptions{Data: frame, DataOut: out}
		if e.ingress != nil {
			// struct xdp_md: data, data_end, data_meta, ingress_ifindex,
			// rx_queue_index, egress_ifindex
			opts.Context = [6]uint32{1: uint32(len(frame)), 3: uint32(e.ingress.Index)}
		}
		ret, err = e.dp.Program().Run(opts)
		out = opts.DataOut
	})
	return Verdict(ret), out, err
}
