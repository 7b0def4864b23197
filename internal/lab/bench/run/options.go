// SPDX-License-Identifier: Apache-2.0

package run

import (
	"fmt"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
)

// connDUTs are the connection scenarios' DUTs by default. The bare XDP
// forwarder is the least an XDP hop costs: on veth, direct carries 64 KB
// GSO segments while any XDP hop carries frames of the MTU, so every
// application table has both.
var connDUTs = map[string][]string{
	"cc":      {"xlb", "nft", "direct"},
	"latency": {"xlb", "xdp-fwd", "nft", "direct"},
	"redis":   {"xlb", "xdp-fwd", "direct"},
	"http":    {"xlb", "xdp-fwd", "nft", "haproxy", "direct"},
	// the Arion report's configurations: through the balancer, the
	// bare XDP forwarder, direct; and the kernel's NAT
	"throughput": {"xlb", "xdp-fwd", "nft", "direct"},
	// xlb against the kernel's NAT and against an XDP hop that does
	// nothing but forward
	"cps": {"xlb", "nft", "xdp-fwd"},
	// xlb without and with its SYN proxy, and the kernel's own SYN
	// proxy (nftables synproxy)
	"synflood": {"xlb", "xlb-synproxy", "nft-synproxy"},
}

// connDefaults fills in the connection scenarios' defaults: the DUTs of
// the reference tables and dperf-like endpoint settings.
func connDefaults(o bench.Options, scenario string) bench.Options {
	if len(o.DUTs) == 0 {
		o.DUTs = connDUTs[scenario]
	}
	if o.Keepalive == 0 {
		o.Keepalive = time.Second
		if scenario == "cc" {
			// each connection a request a minute: 170k requests/s
			// at 10M connections, what one core carries, and under
			// the established timeout of the xlb DUT (900 s)
			o.Keepalive = time.Minute
		}
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
		if scenario == "cc" {
			o.Duration = o.Keepalive // every connection sends a request
		}
	}
	if len(o.CPUs) == 0 {
		o.CPUs = []int{0}
	}
	if len(o.Cores) == 0 {
		// one core: on more, the senders overrun the lab's veth rings
		// at every rate (see docs/BENCHMARKS.md); --cores 1,2 asks
		o.Cores = []int{1}
	}
	if len(o.Conns) == 0 {
		o.Conns = []int{1_000_000, 10_000_000}
	}
	if o.OpenRate == 0 {
		o.OpenRate = 100_000
		if scenario == "synflood" {
			// legitimate connections: well under every DUT's rate
			// on one core, so that the flood's toll shows
			o.OpenRate = 20_000
		}
	}
	if o.PayloadSize == 0 {
		// the DPVS report's dperf: 1 byte for CPS, 800 for throughput
		o.PayloadSize = map[string]int{"throughput": 800, "latency": 1, "cps": 1}[scenario]
		if o.PayloadSize == 0 {
			o.PayloadSize = 64
		}
	}
	return o
}

// maxHTTPBody bounds http's body sizes (--payload-sizes).
const maxHTTPBody = 1 << 20

// validateConn names the first wrong connection option.
func validateConn(o bench.Options, scenario string) error {
	for _, c := range o.Cores {
		if c < 1 || c > len(o.CPUs) {
			return fmt.Errorf("cores %d: want 1 to %d (the --cpus given)", c, len(o.CPUs))
		}
		for _, d := range o.DUTs {
			if _, n := bench.SplitWorkers(d); n > 0 && c > 1 {
				return fmt.Errorf("DUT %s with --cores %d: a DUT with workers takes one sender core (the client's answers go back to its CPU)", d, c)
			}
		}
	}
	for _, n := range o.Conns {
		if n < 1 || n > endpoint.MaxSlots {
			return fmt.Errorf("concurrent connections %d: want 1 to %d", n, endpoint.MaxSlots)
		}
	}
	most := endpoint.MaxPayload // the XDP endpoints' segments
	if scenario == "http" {
		most = maxHTTPBody
	}
	for _, n := range o.PayloadSizes {
		if n < 1 || n > most {
			return fmt.Errorf("payload size %d: want 1 to %d bytes", n, most)
		}
	}
	switch {
	case o.PayloadSize < 1 || o.PayloadSize > endpoint.MaxPayload:
		return fmt.Errorf("payload size %d: want 1 to %d bytes", o.PayloadSize, endpoint.MaxPayload)
	case o.Keepalive < time.Millisecond:
		return fmt.Errorf("keepalive %v: want at least 1ms", o.Keepalive)
	case o.OpenRate <= 0:
		return fmt.Errorf("open rate %v: want connections per second", o.OpenRate)
	}
	return nil
}
