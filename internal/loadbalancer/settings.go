// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import "time"

// Settings are the data path's runtime knobs, the equivalent of
// `ipvsadm --set` and of DPVS's local port range.
type Settings struct {
	TCPSynTimeout time.Duration // handshake not complete
	TCPTimeout    time.Duration // established
	TCPFinTimeout time.Duration // after FIN
	TCPRstTimeout time.Duration // after RST
	UDPTimeout    time.Duration
	// LocalPortMin and LocalPortMax bound the local ports FullNAT uses,
	// inclusive; the range is split evenly over the CPUs.
	LocalPortMin uint16
	LocalPortMax uint16
	// FIBCacheTTL is how long a next hop found by the kernel's FIB is
	// reused for a destination (whole seconds; 0 looks up every packet).
	// Route and neighbour changes take effect within it.
	FIBCacheTTL time.Duration
}

// DefaultSettings returns IPVS's timeouts (TCP 900 s, FIN 120 s, UDP 300 s)
// and the local port range 1025-65535.
func DefaultSettings() Settings {
	return Settings{
		TCPSynTimeout: 60 * time.Second,
		TCPTimeout:    900 * time.Second,
		TCPFinTimeout: 120 * time.Second,
		TCPRstTimeout: 10 * time.Second,
		UDPTimeout:    300 * time.Second,
		LocalPortMin:  1025,
		LocalPortMax:  65535,
		FIBCacheTTL:   time.Second,
	}
}

// Timeout returns how long a connection entry in state st lives without
// packets.
func (s Settings) Timeout(st ConnState) time.Duration {
	switch st {
	case StateSynSent:
		return s.TCPSynTimeout
	case StateEstablished:
		return s.TCPTimeout
	case StateFin:
		return s.TCPFinTimeout
	case StateClose:
		return s.TCPRstTimeout
	}
	return s.UDPTimeout
}
