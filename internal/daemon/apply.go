// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"net/netip"

	"github.com/xlb-dev/xlb/internal/config"
)

// hostAddrs lists the addresses the host must own for the desired
// services: every VIP and local IP.
func hostAddrs(d *config.Desired) []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(a netip.Addr) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if d == nil {
		return nil
	}
	for _, s := range d.Services {
		add(s.Key.VIP)
		for _, l := range s.LocalIPs {
			add(l)
		}
	}
	return out
}
