// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// MaxServiceLocalIPs is how many local IPs one service can use
// (XLB_MAX_SVC_LADDRS in the data path).
const MaxServiceLocalIPs = 256

// ServiceKey identifies a virtual service. Port 0 matches every port of
// the VIP that has no service of its own.
type ServiceKey struct {
	VIP   netip.Addr
	Port  uint16
	Proto Proto
}

func (k ServiceKey) String() string {
	return fmt.Sprintf("%s %s", k.Proto, netip.AddrPortFrom(k.VIP, k.Port))
}

// Service is a virtual service in FullNAT mode.
type Service struct {
	Key       ServiceKey
	Scheduler Scheduler
	// LocalIPs are the sources FullNAT uses towards the reals, of the
	// VIP's family; connections are spread over them in turn.
	LocalIPs []netip.Addr
	// MaglevSize is the mh/sh table size, a prime (0 = 65537).
	MaglevSize uint32
	// Persistent is ipvsadm -p: seconds a client prefix keeps going to
	// the same real after its last new connection (0 = off).
	Persistent uint32
	// PersistPrefix is the length of the client prefix persistence
	// groups by (ipvsadm -M); 0 means the whole address.
	PersistPrefix uint8
	// Timeouts are the service's own state timeouts; a zero one is the
	// global timeout of its state (Settings).
	Timeouts StateTimeouts
	// ClientAddress is how the reals learn the client's address (TCP
	// only). A change applies to connections opened after it.
	ClientAddress ClientAddress
	// SynProxy answers SYNs with SYN cookies and opens the connection to
	// the real only for a client that returns one (TCP only). A change
	// applies to connections opened after it.
	SynProxy bool
}

// PersistBits is the length of the client prefix persistence groups by,
// the whole address when PersistPrefix is 0.
func (s *Service) PersistBits() uint8 {
	if s.PersistPrefix == 0 {
		return uint8(s.Key.VIP.BitLen())
	}
	return s.PersistPrefix
}

// Validate checks that the data path can install the service.
func (s *Service) Validate() error {
	k := s.Key
	if !k.VIP.IsValid() {
		return errors.New("vip: not an IP address")
	}
	if k.VIP.Is4In6() {
		return fmt.Errorf("vip %s: use the plain IPv4 form", k.VIP)
	}
	if k.Proto != TCP && k.Proto != UDP {
		return fmt.Errorf("protocol %d: want tcp or udp", k.Proto)
	}
	if !s.Scheduler.Valid() {
		return fmt.Errorf("scheduler %d: want rr, wrr, mh, sh, lc or wlc", s.Scheduler)
	}
	// no local IP is allowed (ipvsadm -A before --add-laddr): new
	// connections are dropped as no_laddr until one is added
	if len(s.LocalIPs) > MaxServiceLocalIPs {
		return fmt.Errorf("local IPs: at most %d, have %d", MaxServiceLocalIPs, len(s.LocalIPs))
	}
	if int(s.PersistPrefix) > k.VIP.BitLen() {
		return fmt.Errorf("persistence prefix /%d: longer than a %d-bit address", s.PersistPrefix, k.VIP.BitLen())
	}
	for i, ip := range s.LocalIPs {
		if !ip.IsValid() || ip.Is4() != k.VIP.Is4() {
			return fmt.Errorf("local IP %s: not an address of the VIP's family", ip)
		}
		if slices.Contains(s.LocalIPs[:i], ip) {
			return fmt.Errorf("local IP %s: listed twice", ip)
		}
	}
	if err := s.Timeouts.Validate(); err != nil {
		return fmt.Errorf("timeouts: %w", err)
	}
	if !s.ClientAddress.Valid() {
		return fmt.Errorf("client address %d: want none, toa or proxy-v2", s.ClientAddress)
	}
	if s.ClientAddress != ClientAddressNone && k.Proto != TCP {
		return fmt.Errorf("client_address %s: TCP services only", s.ClientAddress)
	}
	if s.SynProxy && k.Proto != TCP {
		return errors.New("syn_proxy: TCP services only")
	}
	if s.SynProxy && s.ClientAddress != ClientAddressNone {
		return fmt.Errorf("syn_proxy with client_address %s: not supported together yet", s.ClientAddress)
	}
	return nil
}
