// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"slices"

	"github.com/cilium/ebpf"
)

// With workers (loadbalancer.Workers), the interfaces run xlb_steer,
// which hands each flow to a worker CPU, and each worker runs xlb_xdp
// (bpf/lib/steer.h, package workers).

// workerProgram is the name under which Load adds xlb_xdp again as a
// cpumap program.
const workerProgram = "xlb_worker"

// workerObjects are the objects Load assigns when there are workers: the
// object's own and xlb_xdp loaded as a cpumap program.
type workerObjects struct {
	xlbObjects
	XlbWorker *ebpf.Program `ebpf:"xlb_worker"`
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
