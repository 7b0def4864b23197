// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// On veth a frame is received, and the DUT's XDP program or the kernel's
// forwarding runs, on the CPU that sent it: the generator's. A DUT with
// workers runs its data path on CPUs of its own instead, as DPVS runs on
// its worker cores: xlb with its workers (a steering program and a
// cpumap), the bare forwarders the same way, the kernel's forwarding and
// nftables with RPS, what an operator of a single-queue NIC turns on.
// Its name carries the count: xlb-w2 is xlb on 2 worker CPUs.

// WorkerDUT is a DUT whose data path can run on worker CPUs.
type WorkerDUT interface {
	// SetWorkers puts the DUT's data path on cpus; called before Setup.
	SetWorkers(cpus []int)
	// Workers are the DUT's worker CPUs (none: where frames are received).
	Workers() []int
}

// workersSuffix ends the name of a DUT with workers: NAME-wN.
const workersSuffix = "-w"

// WorkersName is the name of DUT base on n worker CPUs.
func WorkersName(base string, n int) string {
	if n <= 0 {
		return base
	}
	return fmt.Sprintf("%s%s%d", base, workersSuffix, n)
}

// SplitWorkers splits a DUT name into the base DUT and its worker
// count (0 for a name without one).
func SplitWorkers(name string) (base string, workers int) {
	i := strings.LastIndex(name, workersSuffix)
	if i < 0 {
		return name, 0
	}
	n, err := strconv.Atoi(name[i+len(workersSuffix):])
	if err != nil || n < 1 {
		return name, 0
	}
	return name[:i], n
}

// WorkerCPUs are the CPUs of n workers: the n highest-numbered, away
// from the senders, which start at CPU 0. On a machine of n CPUs the
// last worker shares CPU 0 with the generator.
func WorkerCPUs(n int) ([]int, error) {
	ncpu := runtime.NumCPU()
	if n < 1 || n > ncpu {
		return nil, fmt.Errorf("%d workers: this machine has %d CPUs", n, ncpu)
	}
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = ncpu - 1 - i
	}
	return cpus, nil
}

// cpuList writes CPUs as a list: 1,0.
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// WorkersVersion is what a DUT's version adds for its workers: which
// CPUs, and how frames get there.
func WorkersVersion(cpus []int, how string) string {
	if len(cpus) == 0 {
		return ""
	}
	return fmt.Sprintf("; data path on worker CPUs %s (%s)", cpuList(cpus), how)
}

// SwitchesMode returns the DUT's ModeSwitcher, if it has one and can
// change mode: workers take native XDP only.
func SwitchesMode(d DUT) (ModeSwitcher, bool) {
	if w, ok := d.(WorkerDUT); ok && len(w.Workers()) > 0 {
		return nil, false
	}
	ms, ok := d.(ModeSwitcher)
	return ms, ok
}

// rps spreads what the balancer's interfaces receive over cpus with
// RPS (no cpus: off, Linux's default). Each frame then leaves the
// receiving CPU for one of them before the kernel's forwarding, as on a
// host whose operator turned RPS on for a single-queue NIC.
type rps struct{ cpus []int }

func (r *rps) SetWorkers(cpus []int) { r.cpus = cpus }
func (r *rps) Workers() []int        { return r.cpus }

// apply writes the RPS mask of every receive queue of the balancer's
// interfaces (sysfs, seen from the balancer's namespace).
func (r *rps) apply(e *Env, on bool) error {
	if len(r.cpus) == 0 {
		return nil
	}
	mask := uint64(0)
	if on {
		for _, c := range r.cpus {
			mask |= 1 << c
		}
	}
	var script strings.Builder
	for _, ifname := range e.Topo.LBInterfaces() {
		fmt.Fprintf(&script, "for q in /sys/class/net/%s/queues/rx-*/rps_cpus; do echo %x > $q || exit 1; done\n", ifname, mask)
	}
	out, err := exec.Command("ip", "netns", "exec", e.Topo.LB(), "sh", "-c", script.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("RPS on the balancer's interfaces: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
