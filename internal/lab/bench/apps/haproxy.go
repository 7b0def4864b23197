// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// haproxyMaxConn is haproxy's connection limit: generous for the app
// scenarios (a few dozen at once), and within the 20000 descriptors a
// process gets here (haproxy wants two per connection).
const haproxyMaxConn = 8000

// NewHAProxyDUT returns the haproxy DUT (see haproxyDUT).
func NewHAProxyDUT() bench.DUT { return &haproxyDUT{} }

// haproxyDUT is haproxy in TCP mode in the balancer's namespace, the
// user-space proxy a VIP often is: one frontend on the app scenarios'
// ports of the VIP, round robin over every real on the same port (a
// server without a port keeps the client's destination port). It ends
// the client's connections and opens its own to the reals. iperf3's
// port hashes the client's address instead (balance source): iperf3's
// control and data connections must reach the same real.
type haproxyDUT struct {
	dir     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when haproxy has exited
	waitErr error
	restore func() error // the balancer's sysctls
	vip     bool         // the VIP is on the balancer's lo
}

func (*haproxyDUT) Name() string   { return "haproxy" }
func (*haproxyDUT) Balances() bool { return true }
func (*haproxyDUT) Target(e *bench.Env, v6, varyDst bool) netip.Addr {
	return bench.VIPTarget(e, v6, varyDst)
}

func (*haproxyDUT) Version(e *bench.Env) string {
	out, err := e.RunIn(e.Topo.LB(), "haproxy", "-v")
	if err != nil {
		return "haproxy ?"
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return first
}

// haproxyConfig is the configuration of the haproxy DUT for topology t,
// with its pid file in dir.
func haproxyConfig(e *bench.Env, dir string) string {
	t := e.Topo
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn %[1]d
    nbthread 1
    pidfile %[2]s/haproxy.pid

defaults
    mode tcp
    maxconn %[1]d
    timeout connect 5s
    timeout client 5m
    timeout server 5m

frontend vip
`, haproxyMaxConn, dir)
	for _, p := range appPorts {
		if p != appPortIperf {
			fmt.Fprintf(&b, "    bind %s:%d\n", t.VIP(), p)
		}
	}
	fmt.Fprintf(&b, "    default_backend reals\n\nfrontend iperf3\n    bind %s:%d\n    default_backend reals_by_source\n", t.VIP(), appPortIperf)
	for _, be := range []struct{ name, balance string }{{"reals", "roundrobin"}, {"reals_by_source", "source"}} {
		fmt.Fprintf(&b, "\nbackend %s\n    balance %s\n", be.name, be.balance)
		for i := 1; i <= t.Reals; i++ {
			fmt.Fprintf(&b, "    server r%d %s\n", i, t.RealAddr(i))
		}
	}
	return b.String()
}

// Setup prepares the lab for TCP, puts the VIP on the balancer's lo and
// starts haproxy in the foreground, as a child process.
func (h *haproxyDUT) Setup(ctx context.Context, e *bench.Env) (err error) {
	if err := e.UseTCP(); err != nil {
		return fmt.Errorf("haproxy DUT: %w", err)
	}
	t := e.Topo
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Teardown(e))
		}
	}()
	if err := netns.IPIn(t.LB(), "addr", "add", t.VIP().String()+"/32", "dev", "lo"); err != nil {
		return fmt.Errorf("haproxy DUT: VIP on lo: %w", err)
	}
	h.vip = true
	// haproxy's connections to the reals: it closes first, so their
	// TIME_WAITs are on its side (TCP_CRR makes thousands a second)
	if h.restore, err = nsSysctls(e, t.LB(), "net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000"); err != nil {
		return fmt.Errorf("haproxy DUT: %w", err)
	}
	if h.dir, err = os.MkdirTemp("", "xlb-bench-haproxy-*"); err != nil {
		return fmt.Errorf("haproxy DUT: %w", err)
	}
	conf := filepath.Join(h.dir, "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(haproxyConfig(e, h.dir)), 0o644); err != nil {
		return fmt.Errorf("haproxy DUT: %w", err)
	}
	logName := filepath.Join(h.dir, "haproxy.log")
	log, err := os.Create(logName)
	if err != nil {
		return fmt.Errorf("haproxy DUT: %w", err)
	}
	defer log.Close()
	h.cmd = t.Exec(t.LB(), "haproxy", "-db", "-f", conf)
	h.cmd.Stdout, h.cmd.Stderr, h.cmd.Dir = log, log, h.dir
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		h.cmd = nil
		return fmt.Errorf("start haproxy in %s: %w", t.LB(), err)
	}
	h.done = make(chan struct{})
	go func() { h.waitErr = h.cmd.Wait(); close(h.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for _, port := range appPorts {
		for {
			ok, err := listening(t.LB(), port)
			if err != nil {
				return fmt.Errorf("haproxy DUT: %w", err)
			}
			if ok {
				break
			}
			select {
			case <-h.done:
				return fmt.Errorf("haproxy in %s exited: %v: %s", t.LB(), h.waitErr, tail(logName))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("haproxy in %s does not listen on port %d after 10 s: %s", t.LB(), port, tail(logName))
			}
		}
	}
	return nil
}

// Alive checks that haproxy still runs.
func (h *haproxyDUT) Alive(context.Context, *bench.Env) error {
	if h.cmd == nil {
		return fmt.Errorf("haproxy: not started")
	}
	select {
	case <-h.done:
		return fmt.Errorf("haproxy exited: %v: %s", h.waitErr, tail(filepath.Join(h.dir, "haproxy.log")))
	default:
		return nil
	}
}

// Teardown stops haproxy (SIGTERM, SIGKILL after 3 s), takes the VIP
// off lo and puts the sysctls back.
func (h *haproxyDUT) Teardown(e *bench.Env) error {
	var errs []error
	if h.cmd != nil {
		p := &appProc{name: "haproxy in " + e.Topo.LB(), cmd: h.cmd, done: h.done}
		errs = append(errs, p.stop())
		h.cmd = nil
	}
	if h.vip {
		errs = append(errs, netns.IPIn(e.Topo.LB(), "addr", "del", e.Topo.VIP().String()+"/32", "dev", "lo"))
		h.vip = false
	}
	if h.restore != nil {
		errs = append(errs, h.restore())
		h.restore = nil
	}
	if h.dir != "" {
		errs = append(errs, os.RemoveAll(h.dir))
		h.dir = ""
	}
	// and forget the flows, so the next DUT starts clean
	_, _ = e.RunIn(e.Topo.LB(), "conntrack", "-F")
	return errors.Join(errs...)
}
