// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// DropReason says why the data path dropped a packet (enum xlb_drop_reason).
type DropReason uint32

// DropReasonNames names every drop reason, indexed by its value, as the
// metrics and the CLI show them.
var DropReasonNames = []string{
	"eth_truncated", "ip_truncated", "ip_version", "ip_ihl", "ip_length",
	"fragment", "ipv6_exthdr", "l4_truncated", "tcp_doff", "ttl_expired",
	"no_real", "no_laddr", "no_lport", "conn_table_full", "fib", "udp_csum_zero",
	"icmp_inner", "no_neigh", "tcp_not_syn", "udp_length", "frag_needed",
	"too_big", "header_split", "syncookie_invalid", "synproxy_early",
}

// Drop reasons, as the data path numbers them.
const (
	DropEthTruncated DropReason = iota
	DropIPTruncated
	DropIPVersion
	DropIPIHL
	DropIPLength
	DropFragment
	DropIPv6ExtHdr
	DropL4Truncated
	DropTCPDoff
	DropTTLExpired
	DropNoReal
	DropNoLocalIP
	DropNoLocalPort
	DropConnTableFull
	DropFIB
	DropUDPChecksumZero
	DropICMPInner
	DropNoNeigh
	DropTCPNotSYN
	DropUDPLength
	DropFragNeeded
	DropTooBig
	DropHeaderSplit
	DropSyncookieInvalid
	DropSynproxyEarly
	numDropReasons
)

func (r DropReason) String() string {
	if int(r) < len(DropReasonNames) {
		return DropReasonNames[r]
	}
	return fmt.Sprintf("drop(%d)", uint32(r))
}

// Family values of the data path (enum xlb_family, from the object).
const (
	familyV4 = uint8(xlbXlbFamilyXLB_AF_INET)
	familyV6 = uint8(xlbXlbFamilyXLB_AF_INET6)
)

func familyOf(a netip.Addr) uint8 {
	if a.Is4() {
		return familyV4
	}
	return familyV6
}

// toAddr converts an address to the data path's layout: network byte
// order in memory, IPv4 in the first word.
func toAddr(a netip.Addr) xlbXlbAddr {
	var out xlbXlbAddr
	if a.Is4() {
		b := a.As4()
		out.W[0] = binary.NativeEndian.Uint32(b[:])
		return out
	}
	b := a.As16()
	for i := range out.W {
		out.W[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return out
}

func fromAddr(w [4]uint32, family uint8) netip.Addr {
	var b [16]byte
	for i := range w {
		binary.NativeEndian.PutUint32(b[4*i:], w[i])
	}
	if family == familyV4 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}

// htons and ntohs convert ports between host order and the network order
// the maps hold.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

func ntohs(v uint16) uint16 { return htons(v) }
