// SPDX-License-Identifier: Apache-2.0

package labtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// RunTestsWithXLB is the TestMain of packages whose tests run a real xlb
// (the daemon, the reals' servers): as root it builds cmd/xlb into a
// temporary directory, stores its path in *bin, runs the tests and
// removes the binary. A test binary must never be run as xlb itself (it
// would run every test again, each starting labs): it refuses.
func RunTestsWithXLB(m *testing.M, bin *string) int {
	if len(os.Args) > 1 && (os.Args[1] == "daemon" || os.Args[1] == "lab") {
		fmt.Fprintln(os.Stderr, "a test binary run as xlb: refusing")
		return 2
	}
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "xlb-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if *bin, err = BuildXLB(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// BuildXLB builds cmd/xlb into dir with the go tool on PATH (or the one
// of the running toolchain) and returns the binary's path: tests that
// need a real xlb (as daemon, as the reals' servers) build one.
func BuildXLB(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "xlb")
	if out, err := exec.Command(goBin, "build", "-buildvcs=auto", "-o", bin, "github.com/xlb-dev/xlb/cmd/xlb").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build xlb: %w\n%s", err, out)
	}
	return bin, nil
}
