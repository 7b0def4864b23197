// SPDX-License-Identifier: Apache-2.0

package run

import (
	"slices"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
)

// NewDUT returns the DUT called name for a scenario, any of them: the
// bare XDP forwarder, haproxy of the connection scenarios, xlb in the
// scenario's shape (xlbShape), or one of the lab's own (bench.NewDUT,
// which names what it takes when name is none of them).
func NewDUT(name, scenario string, o bench.Options) (bench.DUT, error) {
	switch name {
	case "xlb":
		return bench.NewXLBDUT(xlbShape(scenario, o)), nil
	case "xdp-fwd":
		return frames.NewFwdDUT(), nil
	case "haproxy":
		return apps.NewHAProxyDUT(), nil
	}
	return bench.NewDUT(name)
}

// xlbShape is the xlb DUT a scenario takes: cps the DPVS report's; cc a
// table for the most connections held and a quarter more, local IPs enough for them and
// an established timeout (90 s, DPVS's) above the keepalive interval;
// the others the default. --conn-table sets the table in any.
func xlbShape(scenario string, o bench.Options) bench.XLBShape {
	shape := bench.DefaultXLBShape
	switch scenario {
	case "cps":
		shape = bench.DPVSXLBShape
	case "cc":
		most := slices.Max(append([]int{1}, o.Conns...))
		// with a quarter to spare, as an operator sizes a table
		// (docs/operator-guide.md, "Connection table full")
		shape.ConnTable = most + most/4
		shape.LocalIPs = ccLocalIPs(most, max(o.Reals, 1))
		shape.Timeouts = "{tcp: 90, tcp_fin: 2, udp: 60}"
	}
	if o.ConnTable > 0 {
		shape.ConnTable = o.ConnTable
	}
	return shape
}

// portsPerPair are the local ports of one local IP towards one real
// (1025-65535, the default local_port_range).
const portsPerPair = 64511

// ccLocalIPs is how many local IPs hold conns connections over reals
// with room to spare: twice what an even spread needs, since the
// scheduler and the ports of a pair are not spread evenly; at least the
// default shape's, at most a service's 256.
func ccLocalIPs(conns, reals int) int {
	need := (2*conns + portsPerPair*reals - 1) / (portsPerPair * reals)
	return min(max(need, bench.DefaultXLBShape.LocalIPs), 256)
}
