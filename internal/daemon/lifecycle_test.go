// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinPathMustBeOnBPFFS: a pin path elsewhere is refused and nothing is
// created or mounted there (stop removes the directory).
func TestPinPathMustBeOnBPFFS(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{filepath.Join(tmp, "pins"), "not on a bpf file system"},
		{"relative/pins", "absolute path"},
		{"/etc/xlb-pins", "not on a bpf file system"},
	} {
		err := ensureBPFFS(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ensureBPFFS(%q) = %v, want an error saying %q", c.path, err, c.want)
		}
		if _, err := os.Stat(c.path); err == nil {
			t.Errorf("ensureBPFFS(%q) created it", c.path)
		}
	}
}

// TestStaleSocket: only a socket is removed from the socket path.
func TestStaleSocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-socket")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeStaleSocket(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("removeStaleSocket on a file: %v, want a refusal", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the file is gone: %v", err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := removeStaleSocket(sock); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("a stale socket was left: %v", err)
	}
	if err := removeStaleSocket(sock); err != nil {
		t.Errorf("no socket at all: %v", err)
	}
}

// TestOneDaemonAtATime: the second lock on a socket is refused, naming
// the lock, until the first is released.
func TestOneDaemonAtATime(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "xlb.sock")
	unlock, err := lockDaemon(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDaemon(sock); err == nil || !strings.Contains(err.Error(), "another xlb daemon is running") {
		t.Fatalf("a second lock: %v, want a refusal", err)
	}
	unlock()
	unlock2, err := lockDaemon(sock)
	if err != nil {
		t.Fatalf("lock after the release: %v", err)
	}
	unlock2()
}
