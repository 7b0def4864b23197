// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestRemoveOrphans: a namespace named after a process that has ended is
// removed; one named after a running process (this one) is kept.
func TestRemoveOrphans(t *testing.T) {
	testenv.RequireRoot(t, "creates network namespaces")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("xlborph%d-", os.Getpid())
	orphan := fmt.Sprintf("%s%d-1", prefix, gone.Process.Pid)
	alive := fmt.Sprintf("%s%d-1", prefix, os.Getpid())
	for _, ns := range []string{orphan, alive} {
		if err := IP("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = IP("netns", "del", ns) })
	}
	removed, err := RemoveOrphans(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{orphan}) {
		t.Errorf("removed %v, want [%s]", removed, orphan)
	}
	if _, err := os.Stat(Path(orphan)); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", orphan, err)
	}
	if _, err := os.Stat(Path(alive)); err != nil {
		t.Errorf("%s, of a running process, was removed: %v", alive, err)
	}
}
