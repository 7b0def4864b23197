// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Magic opens the payload of every generated frame; sinks count only
// frames that carry it (bpf/bench/sink.bpf.c SINK_MAGIC).
const Magic = 0x584c4247 // "XLBG"

// FCS is the Ethernet frame check sequence: frame sizes count it, as
// RFC 2544 and every traffic generator do, but veth carries no FCS, so a
// 64-byte frame is 60 bytes of data here.
const FCS = 4

// Frame sizes the bench accepts, FCS included.
const (
	MinFrameSize   = 64
	MaxFrameSize   = 1518
	MaxJumboSize   = 9018
	maxTemplateHdr = 96 // GEN_HDR_MAX of bpf/bench/gen.bpf.c
)

// IMIX is the frame size that stands for the simple IMIX (RFC 6985's
// "7:4:1"): 7 frames of 64 bytes, 4 of 570 and 1 of 1518 in every 12, in
// that proportion all along (bpf/bench/gen.bpf.c GEN_IMIX_SECOND).
const IMIX = 1

// IMIXSizes and IMIXWeights are the IMIX's frame sizes (with FCS) and
// how many of each a 12-frame cycle has.
var (
	IMIXSizes   = [3]int{64, 570, 1518}
	IMIXWeights = [3]int{7, 4, 1}
)

// MeanSize is the mean frame size of size (with FCS): IMIX's 353.8
// bytes, else size itself. Rates in bits and line rates use it.
func MeanSize(size int) float64 {
	if size != IMIX {
		return float64(size)
	}
	var bytes, frames int
	for i, s := range IMIXSizes {
		bytes += s * IMIXWeights[i]
		frames += IMIXWeights[i]
	}
	return float64(bytes) / float64(frames)
}

// SizeName is how reports name a frame size: "IMIX" or the bytes.
func SizeName(size int) string {
	if size == IMIX {
		return "IMIX"
	}
	return strconv.Itoa(size)
}

// ParseSize reads a frame size: bytes with FCS, or "imix".
func ParseSize(s string) (int, error) {
	if strings.EqualFold(s, "imix") {
		return IMIX, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < MinFrameSize || n > MaxJumboSize {
		return 0, fmt.Errorf("frame size %q: want %d to %d bytes, or imix", s, MinFrameSize, MaxJumboSize)
	}
	return n, nil
}

// L4 is what the frames carry.
type L4 string

// The generator's templates.
const (
	UDP    L4 = "udp"
	TCPSyn L4 = "tcp-syn" // a SYN with the payload
	TCPAck L4 = "tcp-ack" // an ACK with the payload
)

// Frame describes the generator's first frame; flows vary from it.
type Frame struct {
	Size int // bytes with FCS: 64..1518, or up to 9018 (jumbo); IMIX
	L4   L4
	// Stamp makes each frame carry its send time after the magic, which
	// the sinks read when they time frames (Sink.TimeFrames)
	Stamp          bool
	SrcMAC, DstMAC net.HardwareAddr
	Src, Dst       netip.AddrPort
}

// template is a built frame and where its fields are.
type template struct {
	data                  []byte
	ipOff, l4Off, csumOff int
	payloadOff            int // the magic's
	ipv6                  bool
}

// build serializes the frame with correct checksums.
func (f Frame) build() (template, error) {
	if f.Src.Addr().Is4() != f.Dst.Addr().Is4() {
		return template{}, fmt.Errorf("frame: source %s and destination %s are not of one family", f.Src, f.Dst)
	}
	if f.Size < MinFrameSize || f.Size > MaxJumboSize {
		return template{}, fmt.Errorf("frame size %d: want %d to %d (%d and up needs an MTU above 1500)", f.Size, MinFrameSize, MaxJumboSize, MaxFrameSize+1)
	}
	t := template{ipv6: f.Src.Addr().Is6(), ipOff: 14}
	eth := &layers.Ethernet{SrcMAC: f.SrcMAC, DstMAC: f.DstMAC}
	var ip gopacket.NetworkLayer
	var ipLayer gopacket.SerializableLayer
	hdr := 14
	if t.ipv6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, SrcIP: f.Src.Addr().AsSlice(), DstIP: f.Dst.Addr().AsSlice()}
		ip, ipLayer, hdr = v6, v6, hdr+40
	} else {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, SrcIP: f.Src.Addr().AsSlice(), DstIP: f.Dst.Addr().AsSlice()}
		ip, ipLayer, hdr = v4, v4, hdr+20
	}
	t.l4Off = hdr
	var l4 gopacket.SerializableLayer
	switch f.L4 {
	case UDP, "":
		u := &layers.UDP{SrcPort: layers.UDPPort(f.Src.Port()), DstPort: layers.UDPPort(f.Dst.Port())}
		_ = u.SetNetworkLayerForChecksum(ip)
		l4, hdr, t.csumOff = u, hdr+8, hdr+6
		setProto(ipLayer, layers.IPProtocolUDP)
	case TCPSyn, TCPAck:
		tc := &layers.TCP{SrcPort: layers.TCPPort(f.Src.Port()), DstPort: layers.TCPPort(f.Dst.Port()), Seq: 1, DataOffset: 5,
			Window: 65535, SYN: f.L4 == TCPSyn, ACK: f.L4 == TCPAck}
		if tc.ACK {
			tc.Ack = 1
		}
		_ = tc.SetNetworkLayerForChecksum(ip)
		l4, hdr, t.csumOff = tc, hdr+20, hdr+16
		setProto(ipLayer, layers.IPProtocolTCP)
	default:
		return template{}, fmt.Errorf("frame: L4 %q: want udp, tcp-syn or tcp-ack", f.L4)
	}
	data := f.Size - FCS
	if min := hdr + 4 + FCS; f.Size < min {
		return template{}, fmt.Errorf("frame size %d too small for %s over IPv%d: at least %d", f.Size, f.L4, map[bool]int{false: 4, true: 6}[t.ipv6], min)
	}
	t.payloadOff = hdr
	payload := make([]byte, data-hdr)
	binary.BigEndian.PutUint32(payload, Magic)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ipLayer, l4, gopacket.Payload(payload)); err != nil {
		return template{}, fmt.Errorf("frame: %w", err)
	}
	t.data = buf.Bytes()
	return t, nil
}

func setProto(l gopacket.SerializableLayer, p layers.IPProtocol) {
	switch ip := l.(type) {
	case *layers.IPv4:
		ip.Protocol = p
	case *layers.IPv6:
		ip.NextHeader = p
	}
}
