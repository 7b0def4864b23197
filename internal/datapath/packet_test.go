// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"cmp"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// pkt describes a test frame. Frames are built with gopacket, which
// computes every length and checksum from scratch: comparing the data
// path's output with a frame built this way checks its incremental
// checksum updates independently.
type pkt struct {
	srcMAC, dstMAC net.HardwareAddr
	src, dst       netip.AddrPort
	proto          loadbalancer.Proto
	ttl            uint8  // 0 = 64
	flags          string // TCP flags: any of "SAFRP"
	seq            uint32
	ack            uint32 // with flag A; 0 = 1
	window         uint16 // 0 = 64240
	options        []layers.TCPOption
	payload        []byte
	noUDPChecksum  bool   // IPv4 UDP without checksum
	ipOptions      bool   // IPv4 with 4 bytes of options (NOPs)
	vlan           uint16 // 802.1Q tag, 0 = none
}

func (p pkt) ipLayer() (gopacket.SerializableLayer, gopacket.NetworkLayer) {
	ttl := p.ttl
	if ttl == 0 {
		ttl = 64
	}
	next := layers.IPProtocol(p.proto)
	if p.src.Addr().Is4() {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Id: 0x1234, Flags: layers.IPv4DontFragment,
			Protocol: next, SrcIP: p.src.Addr().AsSlice(), DstIP: p.dst.Addr().AsSlice()}
		if p.ipOptions {
			for i := 0; i < 4; i++ {
				ip.Options = append(ip.Options, layers.IPv4Option{OptionType: 1, OptionLength: 1})
			}
		}
		return ip, ip
	}
	ip := &layers.IPv6{Version: 6, HopLimit: ttl, NextHeader: next,
		SrcIP: p.src.Addr().AsSlice(), DstIP: p.dst.Addr().AsSlice()}
	return ip, ip
}

func (p pkt) l4Layer(net gopacket.NetworkLayer) gopacket.SerializableLayer {
	switch p.proto {
	case loadbalancer.TCP:
		tcp := &layers.TCP{SrcPort: layers.TCPPort(p.src.Port()), DstPort: layers.TCPPort(p.dst.Port()),
			Seq: p.seq, Window: cmp.Or(p.window, 64240), Options: p.options,
			SYN: strings.Contains(p.flags, "S"), ACK: strings.Contains(p.flags, "A"),
			FIN: strings.Contains(p.flags, "F"), RST: strings.Contains(p.flags, "R"),
			PSH: strings.Contains(p.flags, "P")}
		if tcp.ACK {
			tcp.Ack = max(p.ack, 1)
		}
		_ = tcp.SetNetworkLayerForChecksum(net)
		return tcp
	default:
		udp := &layers.UDP{SrcPort: layers.UDPPort(p.src.Port()), DstPort: layers.UDPPort(p.dst.Port())}
		_ = udp.SetNetworkLayerForChecksum(net)
		return udp
	}
}

func ethLayer(src, dst net.HardwareAddr, v4 bool) *layers.Ethernet {
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv6}
	if v4 {
		eth.EthernetType = layers.EthernetTypeIPv4
	}
	return eth
}

// frame serialises the packet.
func (p pkt) frame(t testing.TB) []byte {
	t.Helper()
	ip, netLayer := p.ipLayer()
	ls := []gopacket.SerializableLayer{ethLayer(p.srcMAC, p.dstMAC, p.src.Addr().Is4())}
	if p.vlan != 0 {
		eth := ls[0].(*layers.Ethernet)
		tag := &layers.Dot1Q{VLANIdentifier: p.vlan, Type: eth.EthernetType}
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, tag)
	}
	ls = append(ls, ip, p.l4Layer(netLayer), gopacket.Payload(p.payload))
	b := serialize(t, ls...)
	if p.noUDPChecksum {
		l4 := 14 + 20
		b[l4+6], b[l4+7] = 0, 0
	}
	return b
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return buf.Bytes()
}

// reply returns the packet the other end sends back on the same flow.
func (p pkt) reply(flags string) pkt {
	r := p
	r.src, r.dst = p.dst, p.src
	r.srcMAC, r.dstMAC = p.dstMAC, p.srcMAC
	r.flags = flags
	r.payload = nil
	return r
}

// translated returns p as it should leave the balancer: new addresses
// and ports, TTL one less, MACs of the next hop.
func (p pkt) translated(src, dst netip.AddrPort, srcMAC, dstMAC net.HardwareAddr) pkt {
	q := p
	q.src, q.dst = src, dst
	q.srcMAC, q.dstMAC = srcMAC, dstMAC
	if q.ttl == 0 {
		q.ttl = 64
	}
	q.ttl--
	return q
}

// decode parses a frame for assertions on single fields.
func decode(b []byte) gopacket.Packet {
	return gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
}

// dstOf returns the destination address and port of a TCP/UDP frame.
func dstOf(t testing.TB, b []byte) netip.AddrPort {
	t.Helper()
	pk := decode(b)
	var addr netip.Addr
	if ip, ok := pk.NetworkLayer().(*layers.IPv4); ok {
		addr, _ = netip.AddrFromSlice(ip.DstIP.To4())
	} else if ip, ok := pk.NetworkLayer().(*layers.IPv6); ok {
		addr, _ = netip.AddrFromSlice(ip.DstIP)
	} else {
		t.Fatalf("no IP layer in %x", b)
	}
	switch l := pk.TransportLayer().(type) {
	case *layers.TCP:
		return netip.AddrPortFrom(addr, uint16(l.DstPort))
	case *layers.UDP:
		return netip.AddrPortFrom(addr, uint16(l.DstPort))
	}
	t.Fatalf("no TCP/UDP layer in %x", b)
	return netip.AddrPort{}
}

// srcOf returns the source address and port of a TCP/UDP frame.
func srcOf(t testing.TB, b []byte) netip.AddrPort {
	t.Helper()
	pk := decode(b)
	var addr netip.Addr
	if ip, ok := pk.NetworkLayer().(*layers.IPv4); ok {
		addr, _ = netip.AddrFromSlice(ip.SrcIP.To4())
	} else if ip, ok := pk.NetworkLayer().(*layers.IPv6); ok {
		addr, _ = netip.AddrFromSlice(ip.SrcIP)
	}
	switch l := pk.TransportLayer().(type) {
	case *layers.TCP:
		return netip.AddrPortFrom(addr, uint16(l.SrcPort))
	case *layers.UDP:
		return netip.AddrPortFrom(addr, uint16(l.SrcPort))
	}
	t.Fatalf("no TCP/UDP layer in %x", b)
	return netip.AddrPort{}
}
