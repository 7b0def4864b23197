// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
)

// Workers are the CPUs the balancer's program runs on when the
// interfaces' receive queues are fewer than the CPUs that should do the
// work (veth, a single-queue NIC): the interfaces then run the steering
// program, which hashes each flow to one of them through a cpumap, and
// each worker runs the balancer's program on its own cpumap queue
// (bpf/lib/steer.h). Without workers the program runs where the frame
// was received, as on a NIC whose RSS spreads flows itself.
type Workers struct {
	// CPUs are the worker CPUs, each once.
	CPUs []int
	// Queue is the frames each worker's cpumap queue holds (0: DefaultWorkerQueue).
	Queue int
}

// Worker queue bounds: the kernel refuses a cpumap queue above
// MaxWorkerQueue frames.
const (
	DefaultWorkerQueue = 2048
	MaxWorkerQueue     = 16384
)

// MaxWorkers is how many worker CPUs the steering program spreads over
// (XLB_MAX_WORKERS).
const MaxWorkers = len(xlbSteerSet{}.Cpu)

// workerProgram is the name under which Load adds xlb_xdp again as a
// cpumap program.
const workerProgram = "xlb_worker"

// workerObjects are the objects Load assigns when there are workers: the
// object's own and xlb_xdp loaded as a cpumap program.
type workerObjects struct {
	xlbObjects
	XlbWorker *ebpf.Program `ebpf:"xlb_worker"`
}

// Check tells whether the workers can run on a machine of possible CPUs.
func (w Workers) Check(possible int) error {
	if len(w.CPUs) > MaxWorkers {
		return fmt.Errorf("%d worker CPUs: at most %d", len(w.CPUs), MaxWorkers)
	}
	for i, cpu := range w.CPUs {
		if cpu < 0 || cpu >= possible {
			return fmt.Errorf("worker CPU %d: the machine's CPUs are 0-%d", cpu, possible-1)
		}
		if slices.Contains(w.CPUs[:i], cpu) {
			return fmt.Errorf("worker CPU %d is given twice", cpu)
		}
	}
	if w.Queue < 0 || w.Queue > MaxWorkerQueue {
		return fmt.Errorf("worker queue of %d frames: want 1-%d", w.Queue, MaxWorkerQueue)
	}
	return nil
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
func (d *Datapath) startWorkers(w Workers, worker *ebpf.Program) error {
	set := xlbSteerSet{Count: uint32(len(w.CPUs))}
	for i, cpu := range w.CPUs {
		v := cpumapValue{Qsize: uint32(w.Queue), ProgFD: int32(worker.FD())}
		if v.Qsize == 0 {
			v.Qsize = DefaultWorkerQueue
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
