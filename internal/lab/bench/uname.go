// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine describes where a run happened.
type Machine struct {
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	Go       string `json:"go"`
}

// Summary is the machine in one phrase, as reports give it.
func (m Machine) Summary() string {
	return fmt.Sprintf("%s, kernel %s, %d CPUs (%s)", m.CPUModel, m.Kernel, m.CPUs, m.Go)
}

// ThisMachine reads the kernel release and the CPU model.
func ThisMachine() Machine {
	m := Machine{Kernel: kernelRelease(), CPUModel: "?", CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	b := u.Release[:]
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b)
}

// Build is where the xlb binary a bench runs comes from.
type Build struct {
	Version string `json:"version"`
	// Revision is the commit it was built at ("" for a build outside a
	// git checkout: no commit names its figures).
	Revision string `json:"revision,omitempty"`
	// Modified: the tree had changes not committed. Always written, so
	// that a results file says "false" rather than leaving it out.
	Modified bool `json:"modified"`
}

// Clean reports whether the build names a commit exactly: a revision and
// no change beside it.
func (b Build) Clean() bool { return b.Revision != "" && !b.Modified }

// XLBBuild asks the xlb binary self where it comes from.
func XLBBuild(self string) (Build, error) {
	out, err := exec.Command(self, "version", "--json").Output()
	if err != nil {
		return Build{}, fmt.Errorf("%s version: %w", self, err)
	}
	var b Build
	if err := json.Unmarshal(out, &b); err != nil {
		return Build{}, fmt.Errorf("%s version --json: %w", self, err)
	}
	return b, nil
}

// XLBVersion asks the xlb binary self for its version ("?" if it cannot
// tell).
func XLBVersion(self string) string {
	out, err := exec.Command(self, "version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(strings.TrimPrefix(string(out), "xlb "))
}
