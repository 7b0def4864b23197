// SPDX-License-Identifier: Apache-2.0

package run

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
)

// NewDUT returns the DUT called name for a scenario, any of them: the
// bare XDP forwarder, haproxy of the connection scenarios, xlb in the
// scenario's shape (bench.XLBShapeFor), or one of the lab's own (bench.NewDUT,
// which names what it takes when name is none of them).
//
// A name that ends in -wN (xlb-w2) is the DUT with its data path on N
// worker CPUs (bench.WorkerDUT).
func NewDUT(name, scenario string, o bench.Options) (bench.DUT, error) {
	base, n := bench.SplitWorkers(name)
	dut, err := newBaseDUT(base, scenario, o)
	if err != nil || n == 0 {
		return dut, err
	}
	w, ok := dut.(bench.WorkerDUT)
	if !ok {
		return nil, fmt.Errorf("DUT %s: %s takes no workers (xlb, xdp-fwd, xdp-fixed, kernel and nft do)", name, base)
	}
	cpus, err := bench.WorkerCPUs(n)
	if err != nil {
		return nil, fmt.Errorf("DUT %s: %w", name, err)
	}
	w.SetWorkers(cpus)
	return dut, nil
}

// newBaseDUT is NewDUT for a name without workers.
func newBaseDUT(name, scenario string, o bench.Options) (bench.DUT, error) {
	switch name {
	case "xlb":
		return bench.NewXLBDUT(bench.XLBShapeFor(scenario, o)), nil
	case "xlb-synproxy", "xlb-toa", "xlb-proxy-v2":
		return bench.NewXLBDUT(bench.XLBVariants[name](bench.XLBShapeFor(scenario, o))), nil
	case "xdp-fwd":
		return frames.NewFwdDUT(), nil
	case "xdp-fixed":
		return frames.NewFixedFwdDUT(), nil
	case "haproxy":
		return apps.NewHAProxyDUT(), nil
	}
	return bench.NewDUT(name)
}

// withWorkers runs each DUT that takes workers once per count of
// workers (0: as named), in the order given; the others once.
func withWorkers(duts []string, workers []int, scenario string, o bench.Options) []string {
	if len(workers) == 0 {
		return duts
	}
	var out []string
	for _, name := range duts {
		d, err := NewDUT(name, scenario, o)
		if _, ok := d.(bench.WorkerDUT); !ok || err != nil {
			out = append(out, name) // Validate says what is wrong
			continue
		}
		for _, n := range workers {
			out = append(out, bench.WorkersName(name, n))
		}
	}
	return out
}
