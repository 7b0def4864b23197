// SPDX-License-Identifier: Apache-2.0

package doctor

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrivateMount: a path is private when the two namespaces differ and
// init's root shows another file there, or none; the same namespace is
// never private.
func TestPrivateMount(t *testing.T) {
	dir := t.TempDir()
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self, same, other := link("self", "mnt:[1]"), link("same", "mnt:[1]"), link("other", "mnt:[2]")
	pins := filepath.Join(dir, "pins")
	if err := os.Mkdir(pins, 0o755); err != nil {
		t.Fatal(err)
	}
	// init's root: a tree where the same path is another directory
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root+pins, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		initNS, root string
		want         bool
	}{
		{"same namespace", same, "/", false},
		{"other namespace, same file", other, "", false},
		{"other namespace, another file", other, root, true},
		{"other namespace, init sees none", other, filepath.Join(dir, "nothing"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := privateMount(pins, self, tc.initNS, tc.root)
			if err != nil || got != tc.want {
				t.Errorf("privateMount: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
