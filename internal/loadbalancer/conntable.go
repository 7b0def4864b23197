// SPDX-License-Identifier: Apache-2.0

package loadbalancer

// ConnTableSizes are the sizes of the IPv4 and the IPv6 connection
// tables, in connections: both directions of a connection count once.
// The tables take their memory when the data path is loaded and keep
// their size while it runs (docs/config.md, conn_table).
type ConnTableSizes struct {
	IPv4 uint32
	IPv6 uint32
}

// The sizes a configuration without conn_table gets: 1048576 IPv4
// connections (205 MiB) and 262144 IPv6 ones (102 MiB).
const (
	DefaultIPv4Conns = 1 << 20
	DefaultIPv6Conns = 1 << 18
)

// DefaultConnTableSizes returns DefaultIPv4Conns and DefaultIPv6Conns.
func DefaultConnTableSizes() ConnTableSizes {
	return ConnTableSizes{IPv4: DefaultIPv4Conns, IPv6: DefaultIPv6Conns}
}

// The bounds of a connection table's size, in connections. Above
// MaxConnTableSize an IPv6 table would pass 2^31 slots, the most the
// data path indexes.
const (
	MinConnTableSize = 16
	MaxConnTableSize = 1 << 28
)
