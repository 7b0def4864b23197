// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
)

// Checks of the addresses of a configuration: each on its own for the
// role it plays, then across services (a real or local IP that is a VIP,
// a VIP the host owns).

// addrRole is what an address is in a configuration.
type addrRole int

const (
	roleVIP addrRole = iota
	roleReal
	roleLocalIP
)

func (r addrRole) String() string {
	return [...]string{"a VIP", "a real", "a local IP"}[r]
}

// broadcast4 is the IPv4 limited broadcast address.
var broadcast4 = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// unusable says what kind of address a is when it cannot play role, or
// returns "". No role takes the unspecified, broadcast, multicast or
// loopback addresses (traffic to them never reaches the data path, or
// reaches every host); a VIP is not link-local either, since clients
// beyond the link could never reach it. Subnet broadcast addresses
// depend on prefixes the configuration does not know and pass.
func unusable(a netip.Addr, role addrRole) string {
	switch {
	case a.IsUnspecified():
		return "the unspecified address"
	case a == broadcast4:
		return "the broadcast address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsLoopback():
		return "a loopback address"
	case role == roleVIP && a.IsLinkLocalUnicast():
		return "a link-local address"
	}
	return ""
}

// addr parses the address in a field. It rejects what the data path
// cannot use: IPv4-mapped IPv6 (write IPv4), zones, and the addresses
// unusable refuses for the role.
func (ch *checker) addr(path, s string, role addrRole) (netip.Addr, bool) {
	if s == "" {
		ch.addf(path, "an IP address is required")
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		ch.addf(path, "%q is not an IP address", s)
	case a.Is4In6():
		ch.addf(path, "%s is an IPv4-mapped IPv6 address; write it as %s", s, a.Unmap())
	case a.Zone() != "":
		ch.addf(path, "%s has a zone; zones are not supported", s)
	default:
		if kind := unusable(a, role); kind != "" {
			ch.kindf(ErrUnusableAddress, path, "%s is %s, which cannot be %s", s, kind, role)
			return netip.Addr{}, false
		}
		return a, true
	}
	return netip.Addr{}, false
}

// vipsOf maps each valid VIP of svcs to the first service that has it.
func vipsOf(svcs []Service) map[netip.Addr]int {
	vips := map[netip.Addr]int{}
	for i, s := range svcs {
		a, err := netip.ParseAddr(s.VIP)
		if _, seen := vips[a]; err == nil && !seen {
			vips[a] = i
		}
	}
	return vips
}

// notVIPs refuses a real or a local IP that is a VIP of any service: the
// data path would take the packets xlb sends it for its own.
func (ch *checker) notVIPs(svcs []Service, vips map[netip.Addr]int) {
	check := func(path string, a netip.Addr, role addrRole) {
		if i, ok := vips[a]; ok {
			ch.kindf(ErrAddressIsVIP, path, "%s is the VIP of services[%d], so it cannot also be %s", a, i, role)
		}
	}
	for i, s := range svcs {
		for j, l := range s.LocalIPs {
			for _, a := range localIPAddrs(l) { // a range, every address of it
				check(fmt.Sprintf("services[%d].local_ips[%d]", i, j), a, roleLocalIP)
			}
		}
		for j, r := range s.Reals {
			if a, err := netip.ParseAddr(r.Address); err == nil {
				check(fmt.Sprintf("services[%d].reals[%d].address", i, j), a, roleReal)
			}
		}
	}
}

// hostAddrs refuses addresses the host owns (addresses it had before
// xlb, not ones xlb added). A VIP is refused unless its service says
// host_address: true: it would take the host's own traffic to that
// address (a port-0 service all of it, SSH included). A local IP is
// always refused: the host's own connections from it take their ports
// from the same 65536 as xlb's, and the replies to a port both hold
// would go to one of them only. owns nil knows no address.
func (ch *checker) hostAddrs(svcs []Service, owns func(netip.Addr) bool) {
	if owns == nil {
		return
	}
	owned := map[netip.Addr]bool{}
	mine := func(a netip.Addr) bool {
		m, asked := owned[a]
		if !asked {
			m = owns(a)
			owned[a] = m
		}
		return m
	}
	for i, s := range svcs {
		// a VIP refused as unusable (loopback, ...) gets no hint that
		// host_address would let it through: nothing would
		if a, err := netip.ParseAddr(s.VIP); err == nil && !s.HostAddress && unusable(a, roleVIP) == "" && mine(a) {
			ch.kindf(ErrHostAddress, fmt.Sprintf("services[%d].vip", i),
				"%s is an address this host already has: the service would take the host's own traffic to it "+
					"(a port-0 service all of it, SSH included); set host_address: true on the service if that is meant", a)
		}
		for j, l := range s.LocalIPs {
			for _, a := range localIPAddrs(l) {
				if unusable(a, roleLocalIP) == "" && mine(a) {
					ch.kindf(ErrHostAddress, fmt.Sprintf("services[%d].local_ips[%d]", i, j),
						"%s is an address this host already has: its own connections from it would take ports "+
							"xlb gives its connections, and the replies would reach only one of them; use addresses only xlb uses", a)
					break
				}
			}
		}
	}
}
