// SPDX-License-Identifier: Apache-2.0

// Package workers loads and starts the steering of bpf/lib/steer.h for
// any object that includes it: the balancer's, and the bench's bare
// forwarders. The interfaces run the object's steering program, which
// hands each flow to a worker CPU through the steer_cpus cpumap, and
// each worker's entry runs the object's program, loaded a second time
// as a cpumap program.
package workers

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The maps of bpf/lib/steer.h.
const (
	CPUMap = "steer_cpus"    // CPU -> its queue and the program it runs
	SetMap = "steer_workers" // key 0: the worker CPUs (Set)
)

// Set is struct steer_set: the worker CPUs, in the order flows are
// spread over them.
type Set struct {
	Count uint32
	CPU   [loadbalancer.MaxWorkers]uint32
}

// cpumapValue is struct bpf_cpumap_val: a worker's queue size and the
// program it runs.
type cpumapValue struct {
	Qsize  uint32
	ProgFD int32
}

// Prepare adds to spec a copy of program prog, named worker, that loads
// as a cpumap program, and sizes the cpumap to the possible CPUs.
func Prepare(spec *ebpf.CollectionSpec, prog, worker string, possible int) error {
	p, ok := spec.Programs[prog]
	if !ok {
		return fmt.Errorf("workers: the object has no program %s", prog)
	}
	m, ok := spec.Maps[CPUMap]
	if !ok {
		return fmt.Errorf("workers: the object has no %s (include bpf/lib/steer.h)", CPUMap)
	}
	w := p.Copy()
	w.Name = worker
	w.AttachType = ebpf.AttachXDPCPUMap
	spec.Programs[worker] = w
	m.MaxEntries = uint32(possible)
	return nil
}

// Start gives each worker CPU its cpumap queue running prog, then tells
// the steering program about them (cpumap and set are the object's
// CPUMap and SetMap). The cpumap entries hold prog: its handle may be
// closed after.
func Start(cpumap, set *ebpf.Map, w loadbalancer.Workers, prog *ebpf.Program) error {
	s := Set{Count: uint32(len(w.CPUs))}
	qsize := uint32(w.Queue)
	if qsize == 0 {
		qsize = loadbalancer.DefaultWorkerQueue
	}
	for i, cpu := range w.CPUs {
		if err := cpumap.Put(uint32(cpu), cpumapValue{Qsize: qsize, ProgFD: int32(prog.FD())}); err != nil {
			return fmt.Errorf("worker CPU %d: %w", cpu, err)
		}
		s.CPU[i] = uint32(cpu)
	}
	if err := set.Put(uint32(0), s); err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	return nil
}
