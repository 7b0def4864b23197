// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// The test namespace's addresses (package progns).
var (
	vip4      = progns.VIP4
	vip6      = progns.VIP6
	client4   = progns.Client4
	client6   = progns.Client6
	laddr4    = progns.LocalIP4
	laddr6    = progns.LocalIP6
	clientMAC = progns.ClientMAC
	routerMAC = progns.RouterMAC
	realAddr  = progns.RealAddr
	realMAC   = progns.RealMAC
)

// numNSReals is how many reals have neighbour entries.
const numNSReals = progns.NumReals

// testEnv is a data path loaded beside a progns namespace, reporting to
// a test.
type testEnv struct {
	env      *progns.Env
	dp       *Datapath
	ns       string
	clientIf *net.Interface
	realIf   *net.Interface
	// ingress, when set, is the interface BPF_PROG_RUN says frames came
	// in on (else the kernel's default, the loopback device)
	ingress *net.Interface
	// linear, when set, is how many bytes of a frame BPF_PROG_RUN puts in
	// its first buffer (XDP multi-buffer); the rest go in others
	linear int
	t      testing.TB
}

var nsCounter atomic.Int32

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t, "loads BPF programs and creates network namespaces")
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if err := netns.IP(args...); err != nil {
		t.Fatal(err)
	}
}

// removeOrphans removes, once per test process, the namespaces of
// earlier test processes that were killed before their cleanup ran.
var removeOrphans = sync.OnceValue(func() error {
	_, err := netns.RemoveOrphans("xlbt-")
	return err
})

// newEnv builds a namespace and loads a data path with opts (one CPU's
// port range unless opts say otherwise); both are removed when the test
// ends, failed or not, and by the next test process if this one is
// killed first.
func newEnv(t testing.TB, opts Options) *testEnv {
	t.Helper()
	requireRoot(t)
	if err := removeOrphans(); err != nil {
		t.Fatal(err)
	}
	if opts.CPUs == 0 {
		opts.CPUs = 1
	}
	env, err := progns.New(fmt.Sprintf("xlbt-%d-%d", os.Getpid(), nsCounter.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	dp, err := Load(opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { dp.Close() })
	for _, ifc := range []*net.Interface{env.Client, env.Real} {
		// devmap entries name interfaces of the updating thread's namespace
		env.Do(func() { err = dp.AddRedirectTarget(ifc.Index) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return &testEnv{env: env, dp: dp, ns: env.Name, clientIf: env.Client, realIf: env.Real, t: t}
}

// with returns a view of the environment that reports to t (a subtest).
func (e *testEnv) with(t testing.TB) *testEnv {
	c := *e
	c.t = t
	return &c
}

// inNS runs fn on the namespace's thread and waits for it.
func (e *testEnv) inNS(fn func()) { e.env.Do(fn) }

// run passes one frame through the program with BPF_PROG_RUN and returns
// the verdict and the frame as the program left it.
func (e *testEnv) run(frame []byte) (Verdict, []byte) {
	e.t.Helper()
	ret, out, err := e.env.RunSplit(e.dp.Program(), frame, e.ingress, e.linear)
	if err != nil {
		e.t.Fatalf("BPF_PROG_RUN: %v", err)
	}
	return Verdict(ret), out
}
