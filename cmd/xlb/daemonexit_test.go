// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRestartJob(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      bool
	}{
		{"restart running", "4711 xlb.service restart running\n", true},
		{"try-restart", "12 xlb.service try-restart running\n", true},
		{"stop", "4711 xlb.service stop running\n", false},
		{"another unit restarts", "3 nginx.service restart running\n", false},
		{"no jobs", "", false},
		{"among others", "1 a.service start waiting\n2 xlb.service restart running\n", true},
	} {
		if got := restartJob([]byte(c.out), "xlb.service"); got != c.want {
			t.Errorf("%s: restartJob = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSignalAndWait: it returns once the process is gone, not before, and
// a process already gone is not an error.
func TestSignalAndWait(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if err := signalAndWait(cmd.Process.Pid, syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("signalAndWait returned while the process ran")
	}
	if err := signalAndWait(cmd.Process.Pid, syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("a process already gone: %v", err)
	}
}

// TestDaemonExitCodes: a refused configuration exits 78 (the unit's
// RestartPreventExitStatus), before anything is loaded.
func TestDaemonExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "xlb.yaml")
	if err := os.WriteFile(bad, []byte("services: [{vip: nonsense}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	root.SetArgs([]string{"daemon", "--config", bad, "--socket", filepath.Join(t.TempDir(), "s"), "--pin-path", "none"})
	root.SetOut(io.Discard)
	err := root.Execute()
	var ce codedError
	if !errors.As(err, &ce) || ce.code != exitConfig {
		t.Fatalf("daemon with a bad config: %v, want exit status %d", err, exitConfig)
	}
}

// TestUnitExecStopAfterACrash runs the unit file's ExecStop as systemd
// would after the daemon died: $MAINPID empty, ${MAINPID} inside its
// word. It must do nothing and succeed, not fail on its own command line.
func TestUnitExecStopAfterACrash(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "dist", "xlb.service"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStop="); ok {
			for _, w := range strings.Fields(rest)[1:] { // after the binary
				w = strings.ReplaceAll(w, "${MAINPID}", "")
				w = strings.ReplaceAll(w, "%n", "xlb.service")
				if w == "$MAINPID" {
					continue // systemd drops an empty unbraced word
				}
				args = append(args, w)
			}
		}
	}
	if len(args) == 0 {
		t.Fatal("the unit has no ExecStop")
	}
	if out, err := run(args...); err != nil {
		t.Fatalf("xlb %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
