// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"net/netip"
)

// MaxWeight is the largest weight a real can have (as in IPVS).
const MaxWeight = 65535

// Real is a real server of a service.
type Real struct {
	Addr netip.Addr
	// Port is the real's port; 0 keeps the client's destination port
	// (required for port-0 services).
	Port   uint16
	Weight uint32 // 0 drains: no new connections, existing ones continue
}

// AddrPort returns the real's address and port.
func (r Real) AddrPort() netip.AddrPort { return netip.AddrPortFrom(r.Addr, r.Port) }

// ValidateReals checks that reals can serve the service k: addresses of
// the VIP's family, weights in range, no real twice.
func ValidateReals(k ServiceKey, reals []Real) error {
	for i, r := range reals {
		switch {
		case !r.Addr.IsValid() || r.Addr.Is4() != k.VIP.Is4() || r.Addr.Is4In6():
			return fmt.Errorf("real %s: not an address of the VIP's family", r.Addr)
		case r.Weight > MaxWeight:
			return fmt.Errorf("real %s: weight %d above %d", r.AddrPort(), r.Weight, MaxWeight)
		case k.Port == 0 && r.Port != 0:
			return fmt.Errorf("real %s: a port-0 service keeps the client's port, the real's port must be 0", r.AddrPort())
		}
		for _, o := range reals[:i] {
			if o.Addr == r.Addr && o.Port == r.Port {
				return fmt.Errorf("real %s: listed twice", r.AddrPort())
			}
		}
	}
	return nil
}
