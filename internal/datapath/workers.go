// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// With workers (loadbalancer.Workers), the interfaces run xlb_steer,
// which hands each flow to a worker CPU through the steer_cpus cpumap,
// and each worker's entry runs xlb_xdp, loaded a second time as a cpumap
// program (bpf/lib/steer.h).

// workerProgram is the name under which Load adds xlb_xdp again as a
// cpumap program.
const workerProgram = "xlb_worker"

// workerObjects are the objects Load assigns when there are workers: the
// object's own and xlb_xdp loaded as a cpumap program.
type workerObjects struct {
	xlbObjects
	XlbWorker *ebpf.Program `ebpf:"xlb_worker"`
}

// prepareWorkers adds the cpumap copy of xlb_xdp to spec and sizes the
// cpumap to the possible CPUs.
func prepareWorkers(spec *ebpf.CollectionSpec, possible int) error {
	prog, ok := spec.Programs[xlbProgXlbXdp]
	if !ok {
		return errors.New("workers: the object has no xlb_xdp")
	}
	worker := prog.Copy()
	worker.Name = workerProgram
	worker.AttachType = ebpf.AttachXDPCPUMap
	spec.Programs[workerProgram] = worker
	spec.Maps[xlbMapSteerCpus].MaxEntries = uint32(possible)
	return nil
}

// cpumapValue is struct bpf_cpumap_val: a worker's queue size and the
// program it runs.
type cpumapValue struct {
	Qsize  uint32
	ProgFD int32
}

// startWorkers gives each worker its cpumap queue running xlb_xdp, then
// tells the steering program about them.
func (d *Datapath) startWorkers(w loadbalancer.Workers, worker *ebpf.Program) error {
	set := xlbSteerSet{Count: uint32(len(w.CPUs))}
	for i, cpu := range w.CPUs {
		v := cpumapValue{Qsize: uint32(w.Queue), ProgFD: int32(worker.FD())}
		if v.Qsize == 0 {
			v.Qsize = loadbalancer.DefaultWorkerQueue
		}
		if err := d.objs.SteerCpus.Put(uint32(cpu), v); err != nil {
			return fmt.Errorf("worker CPU %d: %w", cpu, err)
		}
		set.Cpu[i] = uint32(cpu)
	}
	if err := d.objs.SteerWorkers.Put(uint32(0), set); err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	return nil
}

// attachedProgram is the program the interfaces run: the steering
// program with workers, else the balancer's own.
func (d *Datapath) attachedProgram() *ebpf.Program {
	if d.workers != nil {
		return d.objs.XlbSteer
	}
	return d.objs.XlbXdp
}

// WorkerCPUs are the worker CPUs (none: the program runs where frames
// are received).
func (d *Datapath) WorkerCPUs() []int { return slices.Clone(d.workers) }
