// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"encoding/binary"
	"net/netip"
)

// seg describes one IPv4 segment a test sends or expects, built here
// byte by byte with checksums summed in full (not the programs' way).
type seg struct {
	srcMAC, dstMAC [6]byte
	src, dst       netip.AddrPort
	udp            bool
	flags          byte
	seq, ack       uint32
	payload        int // zero bytes
	ttl            byte
}

const (
	fFIN = 0x01
	fSYN = 0x02
	fRST = 0x04
	fPSH = 0x08
	fACK = 0x10
)

var (
	clientMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	lbMAC     = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	clientIP  = netip.MustParseAddr("198.18.0.1")
	vip       = netip.MustParseAddr("10.9.0.10")
)

// bytes builds the frame.
func (s seg) bytes() []byte {
	l4 := 20
	proto := byte(6)
	if s.udp {
		l4, proto = 8, 17
	}
	ttl := s.ttl
	if ttl == 0 {
		ttl = 64
	}
	b := make([]byte, 14+20+l4+s.payload)
	copy(b[0:6], s.dstMAC[:])
	copy(b[6:12], s.srcMAC[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+l4+s.payload))
	binary.BigEndian.PutUint16(ip[6:], 0x4000)
	ip[8], ip[9] = ttl, proto
	sa, da := s.src.Addr().As4(), s.dst.Addr().As4()
	copy(ip[12:16], sa[:])
	copy(ip[16:20], da[:])
	binary.BigEndian.PutUint16(ip[10:], checksum(ip, 0))
	h := b[34:]
	binary.BigEndian.PutUint16(h[0:], s.src.Port())
	binary.BigEndian.PutUint16(h[2:], s.dst.Port())
	pseudo := uint32(sa[0])<<8 | uint32(sa[1])
	pseudo += uint32(sa[2])<<8 | uint32(sa[3])
	pseudo += uint32(da[0])<<8 | uint32(da[1])
	pseudo += uint32(da[2])<<8 | uint32(da[3])
	pseudo += uint32(proto) + uint32(l4+s.payload)
	if s.udp {
		binary.BigEndian.PutUint16(h[4:], uint16(8+s.payload))
		c := checksum(h, pseudo)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(h[6:], c)
		return b
	}
	binary.BigEndian.PutUint32(h[4:], s.seq)
	binary.BigEndian.PutUint32(h[8:], s.ack)
	h[12], h[13] = 5<<4, s.flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	binary.BigEndian.PutUint16(h[16:], checksum(h, pseudo))
	return b
}

// reply is the segment that answers s, with the given fields.
func (s seg) reply(flags byte, seq, ack uint32, payload int) seg {
	return seg{srcMAC: s.dstMAC, dstMAC: s.srcMAC, src: s.dst, dst: s.src, udp: s.udp,
		flags: flags, seq: seq, ack: ack, payload: payload}
}

// checksum is the Internet checksum of b (RFC 1071) plus sum.
func checksum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
