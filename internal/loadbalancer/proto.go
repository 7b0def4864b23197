// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import (
	"fmt"
	"strings"
)

// Proto is an IP protocol number a service can balance.
type Proto uint8

// Protocols a service can have.
const (
	TCP Proto = 6
	UDP Proto = 17
)

func (p Proto) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	}
	return fmt.Sprintf("proto(%d)", uint8(p))
}

// ParseProto parses "tcp" or "udp".
func ParseProto(s string) (Proto, error) {
	switch strings.ToLower(s) {
	case "tcp":
		return TCP, nil
	case "udp":
		return UDP, nil
	}
	return 0, fmt.Errorf("unknown protocol %q (want tcp or udp)", s)
}

// MarshalText writes the protocol's name, as the API shows it.
func (p Proto) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a protocol's name (ParseProto).
func (p *Proto) UnmarshalText(b []byte) error {
	v, err := ParseProto(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
