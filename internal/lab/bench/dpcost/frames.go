// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost/progbench"
	"github.com/xlb-dev/xlb/internal/lab/progns"
)

// conn is connection i of the measurement's table: client
// 10.128.0.0+i/50000 port 10000+i%50000; local IP 10.200.0.0+i/30000 port
// 1025+i%30000 (as a deployment of 10M connections to one real would
// spread them over ~340 local IPs). Half of each local IP's ports stay
// free, so that PutConns finds another port when the reverse pair of the
// one asked for is full.
func conn(i int) (client, local netip.AddrPort) {
	c := netip.AddrFrom4([4]byte{10, 128, byte(i / 50000 >> 8), byte(i / 50000)})
	l := netip.AddrFrom4([4]byte{10, 200, byte(i / 30000 >> 8), byte(i / 30000)})
	return netip.AddrPortFrom(c, uint16(10000+i%50000)), netip.AddrPortFrom(l, uint16(1025+i%30000))
}

// tcpFrame is an untagged IPv4 TCP frame with a short payload.
func tcpFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort, syn bool) []byte {
	return tcpFrameWith(srcMAC, dstMAC, src, dst, syn, []byte("hello xlb"))
}

// partialTCPFrame is tcpFrame filling progbench.FrameLen, its checksum
// field holding the folded pseudo-header sum only, as a sender with TX
// checksum offload hands it over (CHECKSUM_PARTIAL).
func partialTCPFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort) []byte {
	b := tcpFrameWith(srcMAC, dstMAC, src, dst, false, make([]byte, progbench.FrameLen-14-20-20))
	seg := len(b) - offSport
	var sum uint32
	for off := offSrc4; off < offSrc4+8; off += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[off:]))
	}
	sum += 6 + uint32(seg)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[offTCPCsum:], uint16(sum))
	return b
}

func tcpFrameWith(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort, syn bool, payload []byte) []byte {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: 1, Window: 65535, SYN: syn, ACK: !syn}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	_ = gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}, ip, tcp, gopacket.Payload(payload))
	return buf.Bytes()
}

// Offsets in an untagged IPv4 TCP frame.
const (
	offSrc4  = 14 + 12
	offDst4  = 14 + 16
	offSport = 14 + 20
	offDport = 14 + 20 + 2
	// the TCP checksum
	offTCPCsum = 14 + 20 + 16
)

// measuredFlows is how many of n connections a run sends to (the
// harness rotates over progbench.MaxFlows at most) and how far apart.
func measuredFlows(n int) (flows, stride int) {
	flows = min(n, progbench.MaxFlows)
	return flows, max(1, n/flows)
}

// flowConn is the connection measured flow j sends as: the one PutConns
// placed for it, else the first of its stride.
func (e *env) flowConn(j, stride int) int {
	if j < len(e.flowConns) && e.locals[j].IsValid() {
		return e.flowConns[j]
	}
	return j * stride
}

// run builds one row's harness run over the n connections of the
// table: "pass" to another destination, "fwd" client -> VIP, "partial"
// the same with a partial checksum, "rev" real -> local IP, "new" a
// client never seen before on every run, "drop" an ACK of such a client
// (no connection: dropped as tcp_not_syn).
func (e *env) run(n, repeat int, kind string) progbench.Run {
	flows, stride := measuredFlows(n)
	r := progbench.Run{Repeat: repeat}
	client := netip.AddrPortFrom(progns.Client4, 10000)
	dst := netip.AddrPortFrom(progns.VIP4, 80)
	switch kind {
	case "pass", "fwd", "partial":
		if kind == "pass" {
			dst = netip.MustParseAddrPort("10.0.3.3:80")
		}
		r.Frame = tcpFrame(progns.ClientMAC, e.Client.HardwareAddr, client, dst, false)
		if kind == "partial" {
			r.Frame = partialTCPFrame(progns.ClientMAC, e.Client.HardwareAddr, client, dst)
			r.PartialCsumOffset = offTCPCsum
		}
		r.AddrOffset, r.PortOffset = offSrc4, offSport
		for j := 0; j < flows; j++ {
			c, _ := conn(e.flowConn(j, stride))
			r.Flows = append(r.Flows, progbench.Flow{Addr: c.Addr(), Port: c.Port()})
		}
	case "rev":
		r.Frame = tcpFrame(progns.RealMAC(1), e.Real.HardwareAddr, netip.AddrPortFrom(progns.RealAddr(false, 1), 80), netip.AddrPortFrom(progns.LocalIP4, 1025), false)
		r.AddrOffset, r.PortOffset = offDst4, offDport
		for j := 0; j < flows; j++ {
			_, l := conn(e.flowConn(j, stride))
			if j < len(e.locals) && e.locals[j].IsValid() {
				l = e.locals[j]
			}
			r.Flows = append(r.Flows, progbench.Flow{Addr: l.Addr(), Port: l.Port()})
		}
	case "new":
		r.Frame = tcpFrame(progns.ClientMAC, e.Client.HardwareAddr, client, dst, true)
		r.AddrOffset, r.PortOffset = offSrc4, offSport
		r.Sequential, r.SeqBase = true, netip.MustParseAddr("11.0.0.0")
	case "drop":
		r.Frame = tcpFrame(progns.ClientMAC, e.Client.HardwareAddr, client, dst, false)
		r.AddrOffset, r.PortOffset = offSrc4, offSport
		r.Sequential, r.SeqBase = true, netip.MustParseAddr("12.0.0.0")
	}
	return r
}
