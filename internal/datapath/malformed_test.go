// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Offsets in an untagged frame.
const (
	ethLen  = 14
	ipv4Len = 20
	ipv6Len = 40
)

func setTotLen(b []byte, n int) { binary.BigEndian.PutUint16(b[ethLen+2:], uint16(n)) }

// ipv6Ext inserts an extension header of type ext (8 bytes, next header
// nh) after the IPv6 header.
func ipv6Ext(b []byte, ext byte) []byte {
	nh := b[ethLen+6]
	b[ethLen+6] = ext
	out := append([]byte{}, b[:ethLen+ipv6Len]...)
	out = append(out, nh, 0, 0, 0, 0, 0, 0, 0)
	out = append(out, b[ethLen+ipv6Len:]...)
	binary.BigEndian.PutUint16(out[ethLen+4:], uint16(len(out)-ethLen-ipv6Len))
	return out
}

func TestMalformedToVIPIsDroppedAndCounted(t *testing.T) {
	e := newEnv(t, Options{})
	v4, v6 := families[0], families[1]
	e.addService(loadbalancer.ServiceKey{VIP: v4.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, v4.laddr, loadbalancer.Real{Addr: v4.real(1), Port: 80, Weight: 1})
	e.addService(loadbalancer.ServiceKey{VIP: v4.vip, Port: 53, Proto: loadbalancer.UDP}, loadbalancer.RoundRobin, v4.laddr, loadbalancer.Real{Addr: v4.real(1), Port: 53, Weight: 1})
	e.addService(loadbalancer.ServiceKey{VIP: v6.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, v6.laddr, loadbalancer.Real{Addr: v6.real(1), Port: 80, Weight: 1})
	e.addService(loadbalancer.ServiceKey{VIP: v6.vip, Port: 53, Proto: loadbalancer.UDP}, loadbalancer.RoundRobin, v6.laddr, loadbalancer.Real{Addr: v6.real(1), Port: 53, Weight: 1})

	tcp4 := func() []byte { return e.clientPkt(v4, loadbalancer.TCP, 40000, 80, "S").frame(t) }
	udp4 := func() []byte { return e.clientPkt(v4, loadbalancer.UDP, 40000, 53, "").frame(t) }
	tcp6 := func() []byte { return e.clientPkt(v6, loadbalancer.TCP, 40000, 80, "S").frame(t) }
	udp6 := func() []byte { return e.clientPkt(v6, loadbalancer.UDP, 40000, 53, "").frame(t) }
	l4v4 := ethLen + ipv4Len

	for _, tc := range []struct {
		name string
		have []byte
		want DropReason
	}{
		// (the kernel refuses BPF_PROG_RUN frames shorter than Ethernet)
		{"vlan tag truncated", append(append([]byte{}, tcp4()[:12]...), 0x81, 0x00, 0x00), DropEthTruncated},
		{"ipv4 header truncated", tcp4()[:ethLen+10], DropIPTruncated},
		{"ipv4 version 6", func() []byte { b := tcp4(); b[ethLen] = 0x65; return b }(), DropIPVersion},
		{"ipv4 ihl 4", func() []byte { b := tcp4(); b[ethLen] = 0x44; return b }(), DropIPIHL},
		{"ipv4 ihl beyond frame", func() []byte { b := tcp4()[:ethLen+ipv4Len+4]; b[ethLen] = 0x4f; return b }(), DropIPTruncated},
		{"ipv4 total length beyond frame", func() []byte { b := tcp4(); setTotLen(b, len(b)); return b }(), DropIPLength},
		{"ipv4 total length below header", func() []byte { b := tcp4(); setTotLen(b, 16); return b }(), DropIPLength},
		{"ipv4 first fragment", func() []byte { b := tcp4(); b[ethLen+6] = 0x20; return b }(), DropFragment},
		{"ipv4 later fragment", func() []byte { b := tcp4(); b[ethLen+6], b[ethLen+7] = 0, 0x10; return b }(), DropFragment},
		{"tcp truncated", func() []byte { b := tcp4()[:l4v4+10]; setTotLen(b, ipv4Len+10); return b }(), DropL4Truncated},
		{"tcp data offset 4", func() []byte { b := tcp4(); b[l4v4+12] = 0x40; return b }(), DropTCPDoff},
		{"tcp data offset beyond frame", func() []byte { b := tcp4(); b[l4v4+12] = 0xf0; return b }(), DropTCPDoff},
		{"udp truncated", func() []byte { b := udp4()[:l4v4+4]; setTotLen(b, ipv4Len+4); return b }(), DropL4Truncated},
		{"ipv4 ttl 1", func() []byte { p := e.clientPkt(v4, loadbalancer.TCP, 40000, 80, "S"); p.ttl = 1; return p.frame(t) }(), DropTTLExpired},
		{"ipv6 header truncated", tcp6()[:ethLen+30], DropIPTruncated},
		{"ipv6 version 4", func() []byte { b := tcp6(); b[ethLen] = 0x45; return b }(), DropIPVersion},
		{"ipv6 payload length beyond frame", func() []byte { b := tcp6(); b[ethLen+4] = 0x10; return b }(), DropIPLength},
		{"ipv6 fragment header", ipv6Ext(tcp6(), 44), DropFragment},
		{"ipv6 AH header", ipv6Ext(tcp6(), 51), DropIPv6ExtHdr},
		{"ipv6 tcp truncated", func() []byte {
			b := tcp6()[:ethLen+ipv6Len+8]
			binary.BigEndian.PutUint16(b[ethLen+4:], 8)
			return b
		}(), DropL4Truncated},
		{"ipv6 udp checksum 0", func() []byte { b := udp6(); b[ethLen+ipv6Len+6], b[ethLen+ipv6Len+7] = 0, 0; return b }(), DropUDPChecksumZero},
		// strict L4: only a SYN opens a connection; UDP lengths must fit
		{"tcp ack without connection", e.clientPkt(v4, loadbalancer.TCP, 40001, 80, "A").frame(t), DropTCPNotSYN},
		{"tcp no flags", e.clientPkt(v4, loadbalancer.TCP, 40002, 80, "").frame(t), DropTCPNotSYN},
		{"tcp syn-ack", e.clientPkt(v4, loadbalancer.TCP, 40003, 80, "SA").frame(t), DropTCPNotSYN},
		{"tcp syn-fin", e.clientPkt(v4, loadbalancer.TCP, 40004, 80, "SF").frame(t), DropTCPNotSYN},
		{"tcp rst", e.clientPkt(v4, loadbalancer.TCP, 40005, 80, "R").frame(t), DropTCPNotSYN},
		{"tcp fin", e.clientPkt(v4, loadbalancer.TCP, 40006, 80, "F").frame(t), DropTCPNotSYN},
		{"ipv6 tcp ack without connection", e.clientPkt(v6, loadbalancer.TCP, 40001, 80, "A").frame(t), DropTCPNotSYN},
		{"udp length 7", func() []byte { b := udp4(); binary.BigEndian.PutUint16(b[l4v4+4:], 7); return b }(), DropUDPLength},
		{"udp length beyond payload", func() []byte {
			b := udp4()
			binary.BigEndian.PutUint16(b[l4v4+4:], uint16(len(b)-l4v4+1))
			return b
		}(), DropUDPLength},
		{"ipv6 udp length beyond payload", func() []byte {
			b := udp6()
			binary.BigEndian.PutUint16(b[ethLen+ipv6Len+4:], uint16(len(b)-ethLen-ipv6Len+2))
			return b
		}(), DropUDPLength},
		{"ipv6 hop limit 1", func() []byte { p := e.clientPkt(v6, loadbalancer.UDP, 40000, 53, ""); p.ttl = 1; return p.frame(t) }(), DropTTLExpired},
	} {
		t.Run(tc.name, func(t *testing.T) { e.with(t).expectDrop(tc.have, tc.want) })
	}
}

// expectDrop runs a frame that must be dropped for reason: that one
// counter moves by one, and no other.
func (e *testEnv) expectDrop(in []byte, reason DropReason) {
	e.t.Helper()
	before, err := e.dp.Drops()
	if err != nil {
		e.t.Fatal(err)
	}
	e.expect(in, XDPDrop, nil)
	after, err := e.dp.Drops()
	if err != nil {
		e.t.Fatal(err)
	}
	for r := DropReason(0); r < numDropReasons; r++ {
		want := before[r]
		if r == reason {
			want++
		}
		if after[r] != want {
			e.t.Errorf("drops[%s] = %d, want %d", r, after[r], want)
		}
	}
}

func TestMalformedTransportToOthersPasses(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr, loadbalancer.Real{Addr: f.real(1), Port: 80, Weight: 1})
	p := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
	p.dst = netip.MustParseAddrPort("10.0.3.3:80")
	b := p.frame(t)
	b[ethLen+ipv4Len+12] = 0x40 // data offset 4
	e.expect(b, XDPPass, b)
	frag := p.frame(t)
	frag[ethLen+6] = 0x20
	e.expect(frag, XDPPass, frag)
}
