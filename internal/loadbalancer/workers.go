// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"slices"
)

// Workers are the CPUs the balancer's program runs on when the
// interfaces' receive queues are fewer than the CPUs that should do the
// work (veth, a VM's single-queue NIC), as DPVS's workers are. The
// interfaces then run a steering program that hashes each flow to one
// worker, as a NIC's RSS does, and each worker runs the balancer on its
// own queue (bpf/lib/steer.h). Without workers the program runs on the
// CPU that received the frame: on a NIC with a queue per CPU, RSS is the
// steering. Workers take native XDP and change only at a restart.
type Workers struct {
	// CPUs are the worker CPUs, each once; flows are spread over them
	// in this order.
	CPUs []int
	// Queue is the frames each worker's queue holds (0: DefaultWorkerQueue).
	Queue int
}

// Worker bounds: MaxWorkers is XLB_MAX_WORKERS (checked against the C
// object in datapath's tests); the kernel refuses a cpumap queue above
// MaxWorkerQueue frames.
const (
	MaxWorkers         = 64
	DefaultWorkerQueue = 2048
	MaxWorkerQueue     = 16384
)

// Check tells whether the workers are valid on a machine of possible
// CPUs (0: any number).
func (w Workers) Check(possible int) error {
	if len(w.CPUs) > MaxWorkers {
		return fmt.Errorf("%d worker CPUs: at most %d", len(w.CPUs), MaxWorkers)
	}
	for i, cpu := range w.CPUs {
		if cpu < 0 || possible > 0 && cpu >= possible {
			if possible == 0 {
				return fmt.Errorf("worker CPU %d: CPUs are numbered from 0", cpu)
			}
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

// Equal tells whether w and o are the same workers.
func (w Workers) Equal(o Workers) bool {
	return slices.Equal(w.CPUs, o.CPUs) && w.Queue == o.Queue
}
