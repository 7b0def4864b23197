// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"net/netip"
	"slices"
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

// connStateNames names the states as ipvsadm -L -c shows them.
var connStateNames = []string{"SYN_SENT", "ESTABLISHED", "FIN_WAIT", "CLOSE", "UDP"}

func (s ConnState) String() string {
	if int(s) < len(connStateNames) {
		return connStateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseConnState parses a state's name (SYN_SENT, ESTABLISHED, FIN_WAIT,
// CLOSE or UDP).
func ParseConnState(name string) (ConnState, error) {
	if i := slices.Index(connStateNames, name); i >= 0 {
		return ConnState(i), nil
	}
	return 0, fmt.Errorf("unknown connection state %q", name)
}

// MarshalText writes the state's name, as the API shows it.
func (s ConnState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name (ParseConnState).
func (s *ConnState) UnmarshalText(b []byte) error {
	v, err := ParseConnState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
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
	// Timeout is how long the entry lives without packets in its state:
	// its service's own timeout, or the global one.
	Timeout time.Duration
	// ClientAddress is how the connection gives the real the client's
	// address: its service's way when it opened.
	ClientAddress ClientAddress
	// SynProxy: the connection was opened by the SYN proxy.
	SynProxy bool
}
