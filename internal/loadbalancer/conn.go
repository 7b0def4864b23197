// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"net/netip"
	"time"
)

// ConnState is a connection entry's state (enum ct_state).
type ConnState uint8

// Connection states.
const (
	StateSynSent ConnState = iota
	StateEstablished
	StateFin
	StateClose
	StateUDP
)

func (s ConnState) String() string {
	names := []string{"SYN_SENT", "ESTABLISHED", "FIN_WAIT", "CLOSE", "UDP"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ConnEntry is one entry of the connection table. A connection has a
// forward entry (client -> VIP, From is the client) and a reverse entry
// (real -> local IP, From is the real).
type ConnEntry struct {
	Proto   Proto
	From    netip.AddrPort
	To      netip.AddrPort
	Reverse bool
	State   ConnState
	// Idle is how long since the entry last saw a packet.
	Idle time.Duration
	// Peer is what the packet's other end becomes: the local IP and port
	// (forward) or the client's address and port (reverse).
	Peer      netip.AddrPort
	ServiceID uint16
	RealID    uint16
}
