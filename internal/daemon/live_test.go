// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// The tests of this file run the real daemon: the xlb binary TestMain
// builds with the race detector, started by `ip netns exec` in a network
// namespace of the test's own. The test stays in the host's namespace and
// talks to the daemon over its unix socket (a path, which no network
// namespace owns).

// xlbBinary is the xlb TestMain builds (as root) with the race detector.
var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLBRace(m, &xlbBinary)) }

// liveIf is the interface the daemon attaches to in the namespace; its
// veth peer is liveIf's name with 1 for 0, in the namespace too.
const liveIf = "xlbt0"

// liveStopTimeout bounds the daemon's stop at the end of a test: after
// it, the daemon is killed and the test fails.
const liveStopTimeout = 10 * time.Second

var liveNSCount atomic.Int32

// liveNetns creates a network namespace named after this process with a
// veth pair (liveIf at 10.251.1.1/24, up) and returns its name. The
// namespace, and the veth pair with it, is removed when the test ends,
// failed or not; the test fails if it is left.
func liveNetns(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("xlbd-%d-%d", os.Getpid(), liveNSCount.Add(1))
	if err := netns.IP("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.IP("netns", "del", ns); err != nil {
			t.Errorf("remove the test namespace: %v", err)
		}
		if _, err := os.Stat(netns.Path(ns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left behind: %v", ns, err)
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
	return ns
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

// liveDaemon is an xlb daemon process in a test namespace.
type liveDaemon struct {
	cfgPath string
	sock    string
	log     *logBuffer // its standard error: the log and the race reports
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has ended
	waitErr error         // how it ended, once exited is closed
}

// startDaemon runs `xlb daemon` in a new test namespace (liveNetns) on a
// configuration file holding yaml, with --xdp-mode mode ("" for none),
// no pinning and its socket in a test directory; it returns once the
// daemon runs. At the end of the test the daemon gets SIGTERM, and the
// test fails if it does not exit with 0 within liveStopTimeout or if its
// log reports a data race.
func startDaemon(t *testing.T, yaml, mode string) *liveDaemon {
	t.Helper()
	testenv.RequireRoot(t, "creates a network namespace and runs the daemon in it")
	testenv.RequireTool(t, "ip")
	if xlbBinary == "" {
		t.Fatal("TestMain built no xlb binary")
	}
	ns := liveNetns(t)
	dir := t.TempDir()
	d := &liveDaemon{cfgPath: filepath.Join(dir, "xlb.yaml"), sock: filepath.Join(dir, "xlb.sock"),
		log: &logBuffer{}, exited: make(chan struct{})}
	if err := os.WriteFile(d.cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"netns", "exec", ns, xlbBinary, "daemon", "--config", d.cfgPath, "--socket", d.sock, "--pin-path", "none"}
	if mode != "" {
		args = append(args, "--xdp-mode", mode)
	}
	// ip netns exec execs xlb in its own process: signals to cmd.Process
	// reach the daemon.
	d.cmd = exec.Command("ip", args...)
	// race reports on standard error, and a failing exit status for them
	// (the detector's defaults, whatever the caller's GORACE says)
	d.cmd.Env = append(os.Environ(), "GORACE=exitcode=66")
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start the daemon: %v", err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() { d.stop(t) })
	// it logs that it runs once it serves the API and handles SIGHUP
	deadline := time.After(30 * time.Second)
	for !strings.Contains(d.log.String(), "xlb daemon running") {
		select {
		case <-d.exited:
			t.Fatalf("the daemon ended at its start: %v\n%s", d.waitErr, d.log)
		case <-deadline:
			t.Fatalf("the daemon did not start in 30s:\n%s", d.log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", d.cmd.Process.Pid)); err != nil || exe != xlbBinary {
		t.Fatalf("the process signals go to runs %q (%v), not the daemon %s", exe, err, xlbBinary)
	}
	return d
}

// stop sends the daemon SIGTERM and waits for it, killing it after
// liveStopTimeout; the test fails, with the daemon's log, unless it
// exited with 0 in time and reported no data race.
func (d *liveDaemon) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGTERM to the daemon: %v", err)
	}
	var problems []string
	select {
	case <-d.exited:
		if d.waitErr != nil {
			problems = append(problems, fmt.Sprintf("its exit after SIGTERM: %v, want status 0", d.waitErr))
		}
	case <-time.After(liveStopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		problems = append(problems, fmt.Sprintf("it did not stop within %v of SIGTERM and was killed", liveStopTimeout))
	}
	if strings.Contains(d.log.String(), "DATA RACE") {
		problems = append(problems, "it reported a data race")
	}
	if problems != nil {
		t.Errorf("the daemon: %s; its log:\n%s", strings.Join(problems, "; "), d.log)
	}
}

// reload writes yaml to the configuration file and sends the daemon
// SIGHUP; it returns nil once the configuration in force has a real at
// addr, or the daemon's log of the refusal.
func (d *liveDaemon) reload(t *testing.T, yaml, addr string) error {
	t.Helper()
	refusals := strings.Count(d.log.String(), "reload refused")
	if err := os.WriteFile(d.cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP to the daemon: %v", err)
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
