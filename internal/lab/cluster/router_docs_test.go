// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestRouterExamples keeps the operator guide's router examples valid:
// FRR's bgpd and BIRD read dist/router's files without an error, and the
// guide quotes them whole.
func TestRouterExamples(t *testing.T) {
	guide, err := os.ReadFile("../../../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		tool string
		args []string
	}{
		{"frr.conf", "/usr/lib/frr/bgpd", []string{"-C", "-f"}},
		{"bird.conf", "bird", []string{"-p", "-c"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			testenv.RequireTool(t, tc.tool)
			path := "../../../dist/router/" + tc.file
			conf, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(guide), "```\n"+string(conf)+"```\n") {
				t.Errorf("docs/operator-guide.md does not quote dist/router/%s whole", tc.file)
			}
			// bgpd reads as the frr user: a copy it can reach (a
			// checkout may sit in a directory only root enters)
			dir, err := os.MkdirTemp("", "xlb-router-example")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			copyPath := filepath.Join(dir, tc.file)
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copyPath, conf, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tc.tool, append(tc.args, copyPath)...).CombinedOutput()
			// bgpd -C exits 0 whatever it read: its complaints say
			for _, bad := range []string{"No such command", "Unknown command", "[EC ", "syntax error", "error"} {
				if strings.Contains(string(out), bad) {
					err = errBad(bad)
				}
			}
			if err != nil {
				t.Errorf("%s %v %s: %v\n%s", tc.tool, tc.args, tc.file, err, out)
			}
		})
	}
}

type errBad string

func (e errBad) Error() string { return "output says " + string(e) }
