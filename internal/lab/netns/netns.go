// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// Path is the file that names namespace ns.
func Path(ns string) string { return "/run/netns/" + ns }

// enter moves the calling thread into namespace ns; the caller has
// locked it.
func enter(ns string) error {
	fd, err := unix.Open(Path(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", ns, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter namespace %s: %w", ns, err)
	}
	return nil
}

// Run runs fn on an OS thread inside namespace ns, then puts the thread
// back in the namespace it came from. Should that fail, the thread stays
// locked and Go ends it with the goroutine, so no other code ever runs
// in ns by accident.
func Run(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open own namespace: %w", err)
			return
		}
		defer unix.Close(home)
		if err := enter(ns); err != nil {
			errc <- err
			return
		}
		err = fn()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// A Worker is a thread that stays inside a namespace and runs functions
// there one at a time: code that must run in the namespace again and
// again (BPF_PROG_RUN, map updates that name interfaces) without paying
// for a thread each time.
type Worker struct {
	work chan func()
}

// NoCPU leaves a Worker's thread free to run on any CPU.
const NoCPU = -1

// StartWorker starts a worker thread in namespace ns, pinned to CPU cpu
// unless cpu is NoCPU. The thread stays locked when the worker ends, so
// Go discards it instead of reusing a thread that is in another
// namespace.
func StartWorker(ns string, cpu int) (*Worker, error) {
	w := &Worker{work: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		err := enter(ns)
		if err == nil && cpu != NoCPU {
			var cpus unix.CPUSet
			cpus.Set(cpu)
			if err = unix.SchedSetaffinity(0, &cpus); err != nil {
				err = fmt.Errorf("pin to CPU %d: %w", cpu, err)
			}
		}
		ready <- err
		if err != nil {
			return
		}
		for fn := range w.work {
			fn()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// Do runs fn on the worker's thread and waits for it.
func (w *Worker) Do(fn func()) {
	done := make(chan struct{})
	w.work <- func() { fn(); close(done) }
	<-done
}

// Stop ends the worker and its thread; Do must not be called after.
func (w *Worker) Stop() { close(w.work) }

// HardwareAddr returns the MAC address of interface ifname in namespace ns.
func HardwareAddr(ns, ifname string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := Run(ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("MAC of %s in %s: %w", ifname, ns, err)
	}
	return mac, nil
}
