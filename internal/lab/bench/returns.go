// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

// Answer has the reals' sinks answer every bench frame (the sink's
// reflect mode: MACs, addresses and ports swapped, back through the
// DUT) and a sink on the client's c0 count what comes back, as the
// DPVS report's UDP PPS test counts both directions. It returns what
// undoes it. The reals' answers reach the balancer's real-facing veths
// by a redirect, which veth takes only with an XDP program or GRO on the
// receiving end: NewEnv turns GRO on there, for the DUTs without XDP.
func (e *Env) Answer() (undo func() error, err error) {
	if e.Returns == nil {
		if e.Returns, err = traffic.NewSink(); err != nil {
			return nil, err
		}
	}
	if err := e.Returns.Attach(e.Topo.Client(), "c0"); err != nil {
		return nil, err
	}
	if err := e.Sink.Reflect(true); err != nil {
		_ = e.Returns.Detach(e.Topo.Client(), "c0")
		return nil, err
	}
	return func() error {
		err := e.Sink.Reflect(false)
		if derr := e.Returns.Detach(e.Topo.Client(), "c0"); err == nil {
			err = derr
		}
		if err != nil {
			return fmt.Errorf("stop answering: %w", err)
		}
		return nil
	}, nil
}
