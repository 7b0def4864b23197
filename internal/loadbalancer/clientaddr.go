// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import "fmt"

// ClientAddress is how a FullNAT service tells its reals the client's
// address and port, which FullNAT replaces with a local IP and port.
type ClientAddress uint8

// The ways; the data path's service flags XLB_SVC_F_TOA and
// XLB_SVC_F_PROXY_V2 (bpf/lib/client_addr.h).
const (
	// ClientAddressNone: the reals see the local IP and port only.
	ClientAddressNone ClientAddress = iota
	// ClientAddressTOA puts them in TCP option 254 of the client's
	// first segments, as DPVS does; the real reads it with a toa
	// kernel module.
	ClientAddressTOA
	// ClientAddressProxyV2 sends the PROXY protocol v2 header (binary)
	// ahead of the client's first byte, right after the handshake.
	ClientAddressProxyV2
)

var clientAddressNames = map[ClientAddress]string{
	ClientAddressNone:    "none",
	ClientAddressTOA:     "toa",
	ClientAddressProxyV2: "proxy-v2",
}

func (c ClientAddress) String() string {
	if name, ok := clientAddressNames[c]; ok {
		return name
	}
	return fmt.Sprintf("client_address(%d)", uint8(c))
}

// Valid reports whether c is one of the ways above.
func (c ClientAddress) Valid() bool {
	_, ok := clientAddressNames[c]
	return ok
}

// ParseClientAddress parses a client_address value: none, toa or
// proxy-v2 ("" is none).
func ParseClientAddress(s string) (ClientAddress, error) {
	if s == "" {
		return ClientAddressNone, nil
	}
	for c, n := range clientAddressNames {
		if n == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown client_address %q (want none, toa or proxy-v2)", s)
}

// MarshalText writes the name, as the API shows it.
func (c ClientAddress) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a name (ParseClientAddress).
func (c *ClientAddress) UnmarshalText(b []byte) error {
	v, err := ParseClientAddress(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
