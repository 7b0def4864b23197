// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// icmpError builds an ICMP "fragmentation needed" (IPv4) or "packet too
// big" (IPv6) error from src to dst with next-hop MTU 1400, quoting the
// IP header and first 8 transport bytes of the packet quoted.
func icmpError(t testing.TB, srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr, quoted pkt) []byte {
	t.Helper()
	ip, netLayer := quoted.ipLayer()
	inner := serialize(t, ip, quoted.l4Layer(netLayer))
	ipLen := ipv4Len
	if !src.Is4() {
		ipLen = ipv6Len
	}
	inner = inner[:ipLen+8]

	var mtu [4]byte
	binary.BigEndian.PutUint32(mtu[:], 1400)
	if src.Is4() {
		o := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 4), Seq: 1400}
		return serialize(t, ethLayer(srcMAC, dstMAC, true), o, icmp, gopacket.Payload(inner))
	}
	o := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(2, 0)}
	_ = icmp.SetNetworkLayerForChecksum(o)
	return serialize(t, ethLayer(srcMAC, dstMAC, false), o, icmp, gopacket.Payload(append(mtu[:], inner...)))
}

func TestICMPErrorsAreTranslated(t *testing.T) {
	for _, f := range families {
		for _, proto := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			t.Run(f.name+"/"+proto.String(), func(t *testing.T) {
				e := newEnv(t, Options{})
				real1, local := e.oneRealService(f, proto)
				first := e.clientPkt(f, proto, 40000, 80, "S")
				e.expect(first.frame(t), XDPRedirect, nil)
				sent := first.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))

				// From the real side, about the packet we sent the real:
				// reaches the client about the packet it sent the VIP.
				fromReal := icmpError(t, realMAC(1), e.realIf.HardwareAddr, real1.Addr(), f.laddr, sent)
				quotedForClient := first
				quotedForClient.ttl = sent.ttl
				want := icmpError(t, e.clientIf.HardwareAddr, clientMAC, f.vip, f.client, quotedForClient)
				decTTL(want, f.v6)
				e.expect(fromReal, XDPRedirect, want)

				// From the client side, about a reply we sent the client:
				// reaches the real about the reply it sent.
				replyFromReal := pkt{proto: proto, src: real1, dst: local, flags: "A", ttl: 64}
				replyToClient := replyFromReal.translated(first.dst, first.src, nil, nil)
				fromClient := icmpError(t, clientMAC, e.clientIf.HardwareAddr, f.client, f.vip, replyToClient)
				quotedForReal := replyFromReal
				quotedForReal.ttl = replyToClient.ttl
				want = icmpError(t, e.realIf.HardwareAddr, realMAC(1), f.laddr, real1.Addr(), quotedForReal)
				decTTL(want, f.v6)
				e.expect(fromClient, XDPRedirect, want)
			})
		}
	}
}

func TestICMPAboutUnknownConnectionPasses(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	quoted := pkt{proto: loadbalancer.TCP, src: netip.AddrPortFrom(f.laddr, 1999), dst: netip.AddrPortFrom(f.real(1), 80), flags: "S"}
	b := icmpError(t, realMAC(1), e.realIf.HardwareAddr, f.real(1), f.laddr, quoted)
	e.expect(b, XDPPass, b)
}

// decTTL lowers the outer TTL or hop limit of a frame by one, fixing the
// IPv4 header checksum from scratch.
func decTTL(b []byte, v6 bool) {
	if v6 {
		b[ethLen+7]--
		return
	}
	b[ethLen+8]--
	b[ethLen+10], b[ethLen+11] = 0, 0
	var sum uint32
	for i := 0; i < ipv4Len; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[ethLen+i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[ethLen+10:], ^uint16(sum))
}
