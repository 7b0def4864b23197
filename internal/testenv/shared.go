// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedTempDir returns a temporary directory, removed after the test,
// that every user can reach and write (mode 0777, its parent 0755): for
// tests that run a process as another user (nobody) which must leave a
// file there or reach a socket.
func SharedTempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir makes dir and its parent 0700
	for path, mode := range map[string]os.FileMode{filepath.Dir(dir): 0o755, dir: 0o777} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatalf("shared temp dir: %v", err)
		}
	}
	return dir
}
