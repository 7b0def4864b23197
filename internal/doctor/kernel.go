// SPDX-License-Identifier: Apache-2.0

package doctor

import (
	"fmt"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// Kernel checks the kernel features the services need (the client
// address ways and the SYN proxy probe their helpers) and says whether
// the program takes frames of several buffers (jumbo frames natively).
func Kernel(services []loadbalancer.Service) []Finding {
	var out []Finding
	for _, s := range services {
		if err := datapath.CheckKernel(s); err != nil {
			out = append(out, Finding{Check: "kernel for " + s.Key.String(), Severity: Problem, What: err.Error(),
				Fix: "a newer kernel, or turn the feature off for this service"})
		}
	}
	f := Finding{Check: "kernel multi-buffer XDP", Severity: OK, What: "the kernel has multi-buffer XDP (xdp.frags): jumbo frames in native mode"}
	if !xdpfrags.Supported() {
		f.Severity = Warning
		f.What = fmt.Sprintf("the kernel has no multi-buffer XDP (Linux 5.18): native mode takes frames up to MTU %d", datapath.SingleBufferMTU())
	}
	return append(out, f)
}

// LocalIPs checks that every service has a local IP: a FullNAT service
// without one forwards nothing.
func LocalIPs(services []loadbalancer.Service) []Finding {
	var out []Finding
	for _, s := range services {
		if len(s.LocalIPs) == 0 {
			out = append(out, Finding{Check: "local IPs of " + s.Key.String(), Severity: Problem,
				What: fmt.Sprintf("service %s has no local IP: it forwards nothing until one is added", s.Key),
				Fix:  fmt.Sprintf("xlb laddr add -%s %s -z LIP (or local_ips: in the configuration)", protoFlag(s.Key.Proto), netip.AddrPortFrom(s.Key.VIP, s.Key.Port))})
		}
	}
	return out
}

func protoFlag(p loadbalancer.Proto) string {
	if p == loadbalancer.UDP {
		return "u"
	}
	return "t"
}
