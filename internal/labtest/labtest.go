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
	return runTestsWithXLB(m, bin)
}

// RunTestsWithXLBRace is RunTestsWithXLB with an xlb built with the race
// detector (go build -race), for tests that drive the real daemon hard and
// require its log to report no data race.
func RunTestsWithXLBRace(m *testing.M, bin *string) int {
	return runTestsWithXLB(m, bin, "-race")
}

// runTestsWithXLB is RunTestsWithXLB building xlb with goFlags.
func runTestsWithXLB(m *testing.M, bin *string, goFlags ...string) int {
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
		if *bin, err = BuildXLB(dir, goFlags...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// BuildXLB builds cmd/xlb into dir with the go tool on PATH (or the one
// of the running toolchain), adding goFlags (such as -race) to the
// go build command line, and returns the binary's path: tests that need
// a real xlb (as daemon, as the reals' servers) build one.
func BuildXLB(dir string, goFlags ...string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "xlb")
	args := append([]string{"build", "-buildvcs=auto"}, goFlags...)
	args = append(args, "-o", bin, "github.com/xlb-dev/xlb/cmd/xlb")
	if out, err := exec.Command(goBin, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build xlb (go %v): %w\n%s", args, err, out)
	}
	return bin, nil
}
