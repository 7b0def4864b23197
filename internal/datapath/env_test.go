// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The test topology, inside a network namespace of the test's own: the
// balancer has a client-side interface (xc) and a real-side interface
// (xr), with static neighbours for the client and the reals, so that
// bpf_fib_lookup resolves every destination without sending anything.
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

const numTestReals = 10

// realAddr returns the address of real n (1-based) of a family.
func realAddr(v6 bool, n int) netip.Addr {
	if v6 {
		return netip.MustParseAddr(fmt.Sprintf("fd00:2::%x", n))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.0.2.%d", n))
}

func realMAC(n int) net.HardwareAddr { return net.HardwareAddr{0x02, 0, 0, 0, 2, byte(n)} }

type testEnv struct {
	t        testing.TB
	work     chan func()
	dp       *Datapath
	ns       string
	clientIf *net.Interface
	realIf   *net.Interface
}

var nsCounter atomic.Int32

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads BPF programs and creates network namespaces")
	}
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newEnv loads a data path with one CPU's port range and builds the
// namespace; both are removed when the test ends, failed or not.
func newEnv(t testing.TB, opts Options) *testEnv {
	t.Helper()
	requireRoot(t)
	if opts.CPUs == 0 {
		opts.CPUs = 1
	}
	ns := fmt.Sprintf("xlbt-%d-%d", os.Getpid(), nsCounter.Add(1))
	ipCmd(t, "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	for _, c := range [][]string{
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
	} {
		ipCmd(t, append([]string{"-n", ns}, c...)...)
	}
	for n := 1; n <= numTestReals; n++ {
		for _, v6 := range []bool{false, true} {
			ipCmd(t, "-n", ns, "neigh", "add", realAddr(v6, n).String(), "lladdr", realMAC(n).String(), "dev", "xr", "nud", "permanent")
		}
	}
	for _, s := range []string{"net.ipv4.conf.all.forwarding=1", "net.ipv6.conf.all.forwarding=1"} {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", s).CombinedOutput(); err != nil {
			t.Fatalf("sysctl %s in %s: %v: %s", s, ns, err, out)
		}
	}

	dp, err := Load(opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { dp.Close() })
	e := &testEnv{t: t, dp: dp, ns: ns}
	if err := e.startWorker(); err != nil {
		t.Fatalf("enter namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { close(e.work) })
	e.inNS(func() {
		e.clientIf, err = net.InterfaceByName("xc")
		if err == nil {
			e.realIf, err = net.InterfaceByName("xr")
		}
	})
	if err != nil {
		t.Fatalf("find test interfaces: %v", err)
	}
	for _, ifc := range []*net.Interface{e.clientIf, e.realIf} {
		// devmap entries name interfaces of the updating thread's namespace
		e.inNS(func() { err = dp.AddRedirectTarget(ifc.Index) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// startWorker starts the goroutine that runs every BPF_PROG_RUN of the
// test on a thread inside the test namespace, pinned to CPU 0 so per-CPU
// cursors and port slices are those of one CPU. The thread stays locked
// when the worker ends, so Go discards it instead of reusing a thread
// that is in another namespace.
func (e *testEnv) startWorker() error {
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
	return <-ready
}

// inNS runs fn on the worker thread and waits for it.
func (e *testEnv) inNS(fn func()) {
	done := make(chan struct{})
	e.work <- func() { fn(); close(done) }
	<-done
}

// with returns a view of the environment that reports to t (a subtest).
func (e *testEnv) with(t testing.TB) *testEnv {
	c := *e
	c.t = t
	return &c
}

// run passes one frame through the program with BPF_PROG_RUN and returns
// the verdict and the frame as the program left it.
func (e *testEnv) run(frame []byte) (Verdict, []byte) {
	e.t.Helper()
	var (
		ret uint32
		out = make([]byte, len(frame)+256)
		err error
	)
	e.inNS(func() {
		opts := &ebpf.RunOptions{Data: frame, DataOut: out}
		ret, err = e.dp.Program().Run(opts)
		out = opts.DataOut
	})
	if err != nil {
		e.t.Fatalf("BPF_PROG_RUN: %v", err)
	}
	return Verdict(ret), out
}
