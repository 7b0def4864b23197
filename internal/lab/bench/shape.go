// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"runtime"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// XLBShape is how the xlb DUT's services are built.
type XLBShape struct {
	// LocalIPs is how many local IPs each service has: FullNAT holds
	// one port of a local IP and real per connection.
	LocalIPs int
	// Scheduler is the services' scheduler.
	Scheduler string
	// ConnTable is the IPv4 connection table's size (0: the default,
	// 1M): as an operator sizes it for the connections held at the
	// peak, a closed one held for its close timeout included.
	ConnTable int
	// Timeouts are the configuration's timeouts, as YAML (empty: short
	// ones, 60 s and 2 s after a FIN, so that the flows of one trial
	// free their ports for the next flows soon after, and a closed
	// connection is kept 2 s, as the nft DUT's conntrack).
	Timeouts string
	// SynProxy turns the TCP services' SYN proxy on (DUT xlb-synproxy).
	SynProxy bool
	// ClientAddress is the TCP services' client_address, toa or
	// proxy-v2 (DUTs xlb-toa, xlb-proxy-v2); "" for none.
	ClientAddress string
}

// XLBVariants are the xlb DUTs whose TCP services have a feature on,
// by DUT name: the SYN proxy and the client address ways.
var XLBVariants = map[string]func(XLBShape) XLBShape{
	"xlb-synproxy": func(s XLBShape) XLBShape { s.SynProxy = true; return s },
	"xlb-toa":      func(s XLBShape) XLBShape { s.ClientAddress = "toa"; return s },
	"xlb-proxy-v2": func(s XLBShape) XLBShape { s.ClientAddress = "proxy-v2"; return s },
}

// variant is the DUT name of an xlb of this shape and what its feature
// adds to a TCP service's entry in the configuration.
func (s XLBShape) variant() (name, tcpExtra string) {
	switch {
	case s.SynProxy:
		return "xlb-synproxy", ", syn_proxy: true"
	case s.ClientAddress != "":
		return "xlb-" + s.ClientAddress, ", client_address: " + s.ClientAddress
	}
	return "xlb", ""
}

// DefaultXLBShape is the xlb DUT of the frame scenarios and of the runs
// of docs/BENCHMARKS.md: 32 local IPs and Maglev, the default table.
var DefaultXLBShape = XLBShape{LocalIPs: 32, Scheduler: "mh"}

// DPVSXLBShape is the xlb DUT as the DPVS v1.9.2 report set DPVS up for
// its CPS table: 50 local IPs (192.168.3.100-149 there) and round robin,
// with a table for 4M connections: at 300k connections per second
// closed ones held 3 s fill 1M, and a table is sized with room to spare
// (docs/operator-guide.md, "Connection table full").
var DPVSXLBShape = XLBShape{LocalIPs: 50, Scheduler: "rr", ConnTable: 4 << 20}

// NewXLBDUT returns the xlb DUT with services of the given shape.
func NewXLBDUT(shape XLBShape) DUT { return &xlbDUT{shape: shape} }

// XLBShapeFor is the xlb DUT a scenario takes: cps the DPVS report's;
// throughput xlb's default timeouts;
// cc, and the frame scenarios whose most flows with a quarter to spare
// the default table does not hold, a table for the most connections
// (TableFor), local IPs enough
// for them and longer timeouts (cc: xlb's default established timeout,
// 900 s, as a connection opened first waits for the last to open, 100 s
// at 10M, before its first request; frames: UDP flows kept 300 s, as the
// warm-up of 10M flows takes 50 s); the others the default.
// --conn-table (Options.ConnTable) sets the table in any.
func XLBShapeFor(scenario string, o Options) XLBShape {
	shape := DefaultXLBShape
	switch most := slices.Max(append([]int{1}, o.Conns...)); {
	case scenario == "cps":
		shape = DPVSXLBShape
	case scenario == "throughput":
		// xlb's own timeouts (FIN 7 s): a bulk sender's FIN goes out
		// behind its queued data, whose retransmissions after heavy
		// loss may come seconds later; the short 2 s would end such a
		// connection mid-transfer
		shape.Timeouts = "{profile: xlb}"
	case scenario == "cc":
		shape.ConnTable = TableFor(most)
		shape.LocalIPs = localIPsFor(most, max(o.Reals, 1), possibleCPUs())
		shape.Timeouts = "{tcp: 900, tcp_fin: 2, udp: 60}"
	default:
		if flows := slices.Max(append([]int{1}, o.Flows...)); TableFor(flows) > loadbalancer.DefaultIPv4Conns {
			shape.ConnTable = TableFor(flows)
			shape.LocalIPs = localIPsFor(flows, max(o.Reals, 1), possibleCPUs())
			shape.Timeouts = "{tcp: 60, tcp_fin: 2, udp: 300}"
		}
	}
	if o.ConnTable > 0 {
		shape.ConnTable = o.ConnTable
	}
	return shape
}

// TableFor is the connection table for conns connections held at once,
// with a quarter to spare, as an operator sizes one
// (docs/operator-guide.md, "Connection table full").
func TableFor(conns int) int { return conns + conns/4 }

// portsPerPair are the local ports of one local IP towards one real
// (1025-65535, the default local_port_range).
const portsPerPair = 64511

// localIPsFor is how many local IPs hold conns connections over reals
// with room to spare. Each CPU has its own slice of a pair's ports, and
// the lab's traffic arrives on one CPU, so one CPU's slice must hold
// them all; twice what an even spread needs, since the scheduler and
// the ports of a pair are not spread evenly; at least the default
// shape's, at most what the lab's local IP subnet holds.
func localIPsFor(conns, reals, cpus int) int {
	perCPU := portsPerPair / max(cpus, 1)
	need := (2*conns + perCPU*reals - 1) / (perCPU * reals)
	return min(max(need, DefaultXLBShape.LocalIPs), maxLabLocalIPs)
}

// maxLabLocalIPs is how many local IPs the lab has room for: a range
// ending at the topology's local IP (10.NET.2.254, fd00:NET:2::fe) within
// its /24 (a service may have 256, loadbalancer.MaxServiceLocalIPs).
const maxLabLocalIPs = 254

// possibleCPUs is how many CPUs the data path splits the local ports
// over: every possible CPU.
var possibleCPUs = func() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return runtime.NumCPU()
	}
	return n
}
