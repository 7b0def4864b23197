// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
)

// currentUser is the user the test runs as: exec checks run as that
// user need no privilege.
func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// execCheck is an exec check of cmd with its defaults, run as the
// test's own user.
func execCheck(t *testing.T, cmd string, shell bool, timeout time.Duration) config.HealthCheck {
	return config.HealthCheck{Type: "exec", Command: cmd, Shell: shell, User: currentUser(t),
		Interval: config.Duration(max(timeout, time.Second)), Timeout: config.Duration(timeout)}.WithDefaults()
}

// dirEntries lists the names in dir, sorted.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestExecOutputBound checks that a command writing megabytes neither
// blocks nor fills the reason: at most MaxExecOutput bytes are kept,
// and the rest is counted.
func TestExecOutputBound(t *testing.T) {
	const total = 8 << 20 // far beyond a pipe's buffer
	c := execCheck(t, "head -c "+strconv.Itoa(total/2)+" /dev/zero | tr '\\0' o; head -c "+strconv.Itoa(total/2)+
		" /dev/zero | tr '\\0' e >&2; exit 1", true, 10*time.Second)
	start := time.Now()
	err := Check(context.Background(), c, target(t, "127.0.0.1:80"))
	if err == nil {
		t.Fatal("healthy; want exit status 1")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the command blocked on its output", d)
	}
	msg := err.Error()
	if len(msg) > MaxExecOutput+200 {
		t.Errorf("reason of %d bytes; want at most about %d", len(msg), MaxExecOutput)
	}
	if want := strconv.Itoa(total-MaxExecOutput) + " more bytes of output not kept"; !strings.Contains(msg, want) {
		t.Errorf("reason %.200q... does not say %q", msg, want)
	}
	if !strings.Contains(msg, "exit status 1") {
		t.Errorf("reason %.200q does not give the exit status", msg)
	}
}

// TestExecTimeoutKillsGroup checks that at the timeout the whole
// process group goes, a background child of the command included, and
// that the check returns although that child held the output open.
func TestExecTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	c := execCheck(t, "sleep 60 & echo $! > "+pidFile+"; wait", true, 300*time.Millisecond)
	start := time.Now()
	err := Check(context.Background(), c, target(t, "127.0.0.1:80"))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v, want a timeout", err)
	}
	if d := time.Since(start); d > 300*time.Millisecond+execWaitDelay+time.Second {
		t.Errorf("took %v", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		// a killed child stays a zombie until its parent, the shell
		// killed with it, is reaped by init
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's background child %d outlived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExecNoShell checks that a command without shell: true is run
// directly: quoted ; and $ reach the program as they are, unquoted ones
// are refused before anything runs, and shell: true interprets them.
func TestExecNoShell(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   string // DIR stands for the test's directory
		shell bool
		want  string   // part of the error; "" = healthy
		files []string // what the command leaves in DIR
	}{
		{name: "quoted", cmd: `touch 'DIR/a;b' "DIR/\$X" DIR/\$HOME`, files: []string{"$HOME", "$X", "a;b"}},
		{name: "unquoted ;", cmd: "touch DIR/a; touch DIR/b", want: `unquoted ';'`},
		{name: "unquoted $", cmd: "touch DIR/$X", want: `unquoted '$'`},
		{name: "unquoted glob", cmd: "touch DIR/*", want: `unquoted '*'`},
		{name: "redirection", cmd: "echo x > DIR/out", want: `unquoted '>'`},
		{name: "shell", cmd: "touch DIR/a; X=b; touch DIR/$X", shell: true, files: []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := execCheck(t, strings.ReplaceAll(tc.cmd, "DIR", dir), tc.shell, 5*time.Second)
			err := Check(context.Background(), c, target(t, "127.0.0.1:80"))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unhealthy: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
			if got := dirEntries(t, dir); !slices.Equal(got, tc.files) {
				t.Errorf("the command left %q, want %q", got, tc.files)
			}
		})
	}
}

// TestExecEnv checks that a command sees the target's variables and
// none of the daemon's environment but PATH.
func TestExecEnv(t *testing.T) {
	t.Setenv("XLB_TEST_SECRET", "leaked")
	c := execCheck(t, `test -z "$XLB_TEST_SECRET" && test "$XLB_REAL_ADDR:$XLB_REAL_PORT" = 127.0.0.1:81 && `+
		`test "$XLB_VIP:$XLB_VPORT/$XLB_PROTOCOL" = 10.9.9.9:80/tcp && test "$XLB_LOCAL_IP" = 127.0.0.1 && `+
		`test "$USER" = "$LOGNAME" && test -n "$USER" && test "$(pwd)" = /`, true, 5*time.Second)
	if err := Check(context.Background(), c, target(t, "127.0.0.1:81")); err != nil {
		t.Error(err)
	}
}

// TestLimiter checks the slots of exec checks: a full limiter makes
// Acquire wait until a Release, a raised limit or the context's end.
func TestLimiter(t *testing.T) {
	l := NewLimiter(2)
	ctx := context.Background()
	for range 2 {
		if err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a full limiter: %v, want the context's deadline", err)
	}
	for _, free := range []struct {
		name string
		do   func()
	}{
		{"release", l.Release},
		{"raised limit", func() { l.SetLimit(3) }},
	} {
		got := make(chan error, 1)
		go func() { got <- l.Acquire(ctx) }()
		select {
		case err := <-got:
			t.Fatalf("before the %s: Acquire returned %v on a full limiter", free.name, err)
		case <-time.After(50 * time.Millisecond):
		}
		free.do()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("after the %s: %v", free.name, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("after the %s: Acquire still waits", free.name)
		}
	}
	if n := l.Running(); n != 3 {
		t.Errorf("%d running, want 3", n)
	}
	l.SetLimit(1) // lowered: nothing stops, nothing new starts
	if err := l.Acquire(short); err == nil {
		t.Error("Acquire succeeded above a lowered limit")
	}
	l.SetLimit(0)
	if n := l.Limit(); n != 1 {
		t.Errorf("limit %d after SetLimit(0), want 1", n)
	}
}

// TestExecCap checks that a check which finds every slot taken fails
// at its timeout without running, and that the slot is given back.
func TestExecCap(t *testing.T) {
	slots := NewLimiter(1)
	dir := t.TempDir()
	tgt := target(t, "127.0.0.1:80")
	long := make(chan error, 1)
	go func() { long <- check(context.Background(), execCheck(t, "sleep 1", false, 5*time.Second), tgt, slots) }()
	for deadline := time.Now().Add(2 * time.Second); slots.Running() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first check never took its slot")
		}
	}
	err := check(context.Background(), execCheck(t, "touch "+dir+"/ran", false, 200*time.Millisecond), tgt, slots)
	if err == nil || !strings.Contains(err.Error(), "1 exec checks were running (exec_checks.max_running)") {
		t.Errorf("error %v, want one saying every slot was taken", err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Errorf("the check without a slot ran: %q", got)
	}
	if err := <-long; err != nil {
		t.Fatalf("first check: %v", err)
	}
	if err := check(context.Background(), execCheck(t, "touch "+dir+"/ran", false, time.Second), tgt, slots); err != nil {
		t.Errorf("after the slot freed: %v", err)
	}
	if n := slots.Running(); n != 0 {
		t.Errorf("%d slots still taken", n)
	}
}
