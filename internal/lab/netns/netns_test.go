// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// newNS adds a namespace removed when the test ends.
func newNS(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces")
	ns := fmt.Sprintf("xlbns-%d", os.Getpid())
	if err := IP("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = IP("netns", "del", ns) })
	return ns
}

// ownNS is the inode of the calling thread's network namespace.
func ownNS(t *testing.T) uint64 {
	t.Helper()
	st, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return statIno(st)
}

func TestRunAndWorker(t *testing.T) {
	ns := newNS(t)
	target, err := os.Stat(Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	want := statIno(target)
	if err := Run(ns, func() error {
		if got := ownNS(t); got != want {
			return fmt.Errorf("Run: namespace %d, want %d", got, want)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	w, err := StartWorker(ns, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 2 {
		var got uint64
		w.Do(func() { got = ownNS(t) })
		if got != want {
			t.Errorf("Worker: namespace %d, want %d", got, want)
		}
	}
	if err := Sysctl(ns, "net.ipv4.ip_forward=1"); err != nil {
		t.Error(err)
	}
	if err := IPIn(ns, "link", "set", "lo", "up"); err != nil {
		t.Error(err)
	}
}

func TestMissingNamespace(t *testing.T) {
	testenv.RequireRoot(t, "enters network namespaces")
	if err := Run("xlb-no-such-ns", func() error { return nil }); err == nil {
		t.Error("Run in a missing namespace: no error")
	}
	if _, err := StartWorker("xlb-no-such-ns", NoCPU); err == nil {
		t.Error("StartWorker in a missing namespace: no error")
	}
}

// statIno is a file's inode number: a namespace's identity.
func statIno(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
