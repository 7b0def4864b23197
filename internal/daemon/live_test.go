// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/netns"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// The tests of this file run the real daemon, in this process, inside a
// network namespace of their own: inNetns starts a copy of the test
// binary inside the namespace (a process's threads can only all be in
// one namespace if it starts there), which runs the one test again.

// liveNSEnv names, in the environment of the copy inNetns starts, the
// namespace the copy runs in.
const liveNSEnv = "XLB_DAEMON_TEST_NETNS"

// liveIf is the interface the daemon attaches to in the namespace; its
// veth peer is liveIf's name with 1 for 0, in the namespace too.
const liveIf = "xlbt0"

var liveNSCount atomic.Int32

// inNetns runs body inside a new network namespace with a veth pair
// (liveIf at 10.251.1.1/24, up): in a copy of the test binary started
// there by nsenter, which runs the test alone. The namespace is removed
// when the test ends, failed or not.
func inNetns(t *testing.T, body func(t *testing.T)) {
	if os.Getenv(liveNSEnv) != "" {
		body(t)
		return
	}
	testenv.RequireRoot(t, "creates a network namespace and runs the daemon in it")
	testenv.RequireTool(t, "ip")
	testenv.RequireTool(t, "nsenter")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("xlbd-%d-%d", os.Getpid(), liveNSCount.Add(1))
	if err := netns.IP("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.IP("netns", "del", ns); err != nil {
			t.Errorf("remove the test namespace: %v", err)
		}
	})
	for _, args := range [][]string{
		{"link", "add", liveIf, "type", "veth", "peer", "name", "xlbt1"},
		{"addr", "add", "10.251.1.1/24", "dev", liveIf},
		{"link", "set", "lo", "up"},
		{"link", "set", liveIf, "up"},
		{"link", "set", "xlbt1", "up"},
	} {
		if err := netns.IPIn(ns, args...); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--net=" + netns.Path(ns), "--", exe, "-test.run=^" + t.Name() + "$", "-test.count=1", "-test.v"}
	cmd := exec.CommandContext(t.Context(), "nsenter", args...)
	cmd.Env = append(os.Environ(), liveNSEnv+"="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in namespace %s: %v\n%s", t.Name(), ns, err, out)
	}
	t.Logf("in namespace %s:\n%s", ns, out)
}

// logBuffer is a log the test reads while the daemon writes it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// liveDaemon is a daemon Run runs in this process.
type liveDaemon struct {
	cfgPath string
	sock    string
	log     *logBuffer
}

// startDaemon runs the daemon on a configuration file holding yaml, with
// --xdp-mode mode ("" for none), no pinning and its socket in a test
// directory, until the test ends; it returns once the daemon runs.
func startDaemon(t *testing.T, yaml, mode string) *liveDaemon {
	t.Helper()
	dir := t.TempDir()
	d := &liveDaemon{cfgPath: filepath.Join(dir, "xlb.yaml"), sock: filepath.Join(dir, "xlb.sock"), log: &logBuffer{}}
	if err := os.WriteFile(d.cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, Options{ConfigPath: d.cfgPath, Socket: d.sock, PinPath: "none", Mode: mode,
			Version: "test", Log: slog.New(slog.NewTextHandler(d.log, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	// it logs that it runs once it serves the API and handles SIGHUP
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(d.log.String(), "xlb daemon running"); {
		select {
		case err := <-errc:
			errc <- err // for the cleanup
			t.Fatalf("the daemon ended at its start: %v\n%s", err, d.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start in 30s:\n%s", d.log)
		}
	}
	return d
}

// reload writes yaml to the configuration file and sends SIGHUP; it
// returns nil once the configuration in force has a real at addr, or the
// daemon's log of the refusal.
func (d *liveDaemon) reload(t *testing.T, yaml, addr string) error {
	t.Helper()
	refusals := strings.Count(d.log.String(), "reload refused")
	if err := os.WriteFile(d.cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	cl := api.NewClient(d.sock)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Count(d.log.String(), "reload refused") > refusals {
			return errors.New(d.log.String())
		}
		cfg, err := cl.Config(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cfg.Services[0].Reals {
			if r.Address == addr {
				return nil
			}
		}
	}
	t.Fatalf("SIGHUP: no real %s and no refusal in 10s:\n%s", addr, d.log)
	return nil
}

// liveConfig is the daemon's configuration in the namespace: one service
// and the reals liveConfig's argument lists, at 10.251.1.N:8080; mode is
// its xdp_mode ("" for none).
func liveConfig(mode string, reals ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "interfaces: [%s]\n", liveIf)
	if mode != "" {
		fmt.Fprintf(&b, "xdp_mode: %s\n", mode)
	}
	b.WriteString("services:\n  - {vip: 10.251.0.1, port: 80, protocol: tcp, local_ips: [10.251.1.254]")
	if len(reals) > 0 {
		b.WriteString(", reals: [")
		for i, n := range reals {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{address: 10.251.1.%d, port: 8080}", n)
		}
		b.WriteString("]")
	}
	b.WriteString("}\n")
	return b.String()
}
