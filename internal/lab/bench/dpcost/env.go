// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/progns"
)

// env is a data path loaded beside a progns namespace, the redirect
// targets set to the namespace's interfaces.
type env struct {
	*progns.Env
	dp *datapath.Datapath
	// flowConns are the connection each measured flow sends as, and
	// locals the local IP and port it got (PutConns may move a port to
	// find its reverse entry room)
	flowConns []int
	locals    []netip.AddrPort
}

// newEnv builds namespace ns and loads a data path with opts (one CPU's
// port range unless opts say otherwise). Close removes both; on error
// nothing is left.
func newEnv(ns string, opts datapath.Options) (e *env, err error) {
	if opts.CPUs == 0 {
		opts.CPUs = 1
	}
	pe, err := progns.New(ns)
	if err != nil {
		return nil, err
	}
	e = &env{Env: pe}
	built := e
	defer func() {
		if err != nil {
			built.Close() // e is nil by then
		}
	}()
	if e.dp, err = datapath.Load(opts); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	for _, ifc := range []*net.Interface{e.Client, e.Real} {
		// devmap entries name interfaces of the updating thread's namespace
		e.Do(func() { err = e.dp.AddRedirectTarget(ifc.Index) })
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close releases the data path and removes the namespace; closing again
// does nothing.
func (e *env) Close() {
	if e.dp != nil {
		e.dp.Close()
		e.dp = nil
	}
	e.Env.Close()
}
