// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"fmt"
	"github.com/gopacket/gopacket/layers"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// frameInfo is what validFrame learnt of a frame it accepts.
type frameInfo struct {
	l3, l4, end int // offsets; end is where the IP packet ends
	v6          bool
	proto       byte
}

// validFrame is an independent statement, in Go, of what the data path may
// forward: one optional VLAN tag, a complete IPv4 (IHL >= 5, total length
// within the frame, not a fragment, TTL > 1) or IPv6 header (payload
// within the frame, hop limit > 1, at most 4 hop-by-hop, routing or
// destination options headers), and a complete
// TCP (data offset >= 5 and within the frame), UDP or ICMP header.
//
// minTTL is 2 for a frame arriving (it must survive the decrement) and 1
// for a frame leaving.
func validFrame(b []byte, minTTL byte) (frameInfo, error) {
	var fi frameInfo
	if len(b) < ethLen {
		return fi, fmt.Errorf("short ethernet")
	}
	etype := binary.BigEndian.Uint16(b[12:])
	fi.l3 = ethLen
	if etype == 0x8100 || etype == 0x88a8 {
		if len(b) < ethLen+4 {
			return fi, fmt.Errorf("short vlan")
		}
		etype = binary.BigEndian.Uint16(b[16:])
		fi.l3 += 4
	}
	ip := b[fi.l3:]
	switch etype {
	case 0x0800:
		if len(ip) < ipv4Len || ip[0]>>4 != 4 {
			return fi, fmt.Errorf("bad ipv4 header")
		}
		ihl := int(ip[0]&0xf) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		switch {
		case ihl < ipv4Len || ihl > len(ip):
			return fi, fmt.Errorf("bad ihl %d", ihl)
		case tot < ihl || tot > len(ip):
			return fi, fmt.Errorf("bad total length %d", tot)
		case binary.BigEndian.Uint16(ip[6:])&0x3fff != 0:
			return fi, fmt.Errorf("fragment")
		case ip[8] < minTTL:
			return fi, fmt.Errorf("ttl %d", ip[8])
		}
		fi.l4, fi.end, fi.proto = fi.l3+ihl, fi.l3+tot, ip[9]
	case 0x86dd:
		if len(ip) < ipv6Len || ip[0]>>4 != 6 {
			return fi, fmt.Errorf("bad ipv6 header")
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if ipv6Len+plen > len(ip) || ip[7] < minTTL {
			return fi, fmt.Errorf("bad ipv6 length or hop limit")
		}
		fi.v6, fi.l4, fi.end, fi.proto = true, fi.l3+ipv6Len, fi.l3+ipv6Len+plen, ip[6]
		// hop-by-hop, routing and destination options are stepped over
		for n := 0; n < 4 && (fi.proto == 0 || fi.proto == 43 || fi.proto == 60); n++ {
			if fi.l4+8 > len(b) {
				return fi, fmt.Errorf("short extension header")
			}
			fi.proto, fi.l4 = b[fi.l4], fi.l4+(int(b[fi.l4+1])+1)*8
		}
		if fi.l4 > len(b) {
			return fi, fmt.Errorf("extension headers beyond the frame")
		}
	default:
		return fi, fmt.Errorf("not ip")
	}
	l4 := b[fi.l4:]
	switch fi.proto {
	case 6:
		if len(l4) < 20 || int(l4[12]>>4)*4 < 20 || int(l4[12]>>4)*4 > len(l4) {
			return fi, fmt.Errorf("bad tcp header")
		}
	case 17, 1, 58:
		if len(l4) < 8 {
			return fi, fmt.Errorf("short udp/icmp header")
		}
		if fi.proto == 17 && fi.v6 && binary.BigEndian.Uint16(l4[6:]) == 0 {
			return fi, fmt.Errorf("ipv6 udp without checksum")
		}
		if ulen := int(binary.BigEndian.Uint16(l4[4:])); fi.proto == 17 && (ulen < 8 || ulen > fi.end-fi.l4) {
			return fi, fmt.Errorf("udp length %d", ulen)
		}
	default:
		return fi, fmt.Errorf("protocol %d", fi.proto)
	}
	return fi, nil
}

func onesSum(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// checksumsOK verifies the IPv4 header checksum and the L4 checksum of a
// frame validFrame accepted (an IPv4 UDP checksum of 0 means none).
func checksumsOK(b []byte, fi frameInfo) bool {
	if !fi.v6 && fold(onesSum(0, b[fi.l3:fi.l4])) != 0xffff {
		return false
	}
	seg := b[fi.l4:fi.end]
	if len(seg) < 8 {
		return false
	}
	var sum uint32
	if fi.proto != 1 { // ICMPv4 has no pseudo-header
		if fi.v6 {
			sum = onesSum(0, b[fi.l3+8:fi.l3+40])
		} else {
			sum = onesSum(0, b[fi.l3+12:fi.l3+20])
		}
		sum += uint32(fi.proto) + uint32(len(seg))
	}
	if fi.proto == 17 && !fi.v6 && binary.BigEndian.Uint16(seg[6:]) == 0 {
		return true
	}
	return fold(onesSum(sum, seg)) == 0xffff
}

// fuzzEnv is a data path with TCP and UDP services on both families, and
// TCP services with the PROXY protocol (port 81), TOA (82) and the SYN
// proxy (83), whose segments are edited.
func fuzzEnv(t testing.TB) *testEnv {
	e := newEnv(t, Options{})
	for _, f := range families {
		for _, p := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: p}, loadbalancer.MaglevHash, f.laddr, reals(f, 1, 1, 1)...)
		}
		for _, s := range []loadbalancer.Service{
			{Key: loadbalancer.ServiceKey{VIP: f.vip, Port: 81, Proto: loadbalancer.TCP}, ClientAddress: loadbalancer.ClientAddressProxyV2},
			{Key: loadbalancer.ServiceKey{VIP: f.vip, Port: 82, Proto: loadbalancer.TCP}, ClientAddress: loadbalancer.ClientAddressTOA},
			{Key: loadbalancer.ServiceKey{VIP: f.vip, Port: 83, Proto: loadbalancer.TCP}, SynProxy: true},
		} {
			s.LocalIPs = []netip.Addr{f.laddr}
			if err := e.dp.AddService(s); err != nil {
				t.Fatalf("add service: %v", err)
			}
			if err := e.dp.SetReals(s.Key, reals(f, 1, 1, 1)); err != nil {
				t.Fatalf("set reals: %v", err)
			}
		}
	}
	return e
}

// seedFrames are well-formed frames of both directions and both families.
func seedFrames(t testing.TB, e *testEnv) [][]byte {
	var out [][]byte
	for _, f := range families {
		for _, p := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			c := e.clientPkt(f, p, 40000, 80, "S")
			out = append(out, c.frame(t))
			r := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: p, flags: "SA",
				src: c.dst, dst: c.src}
			r.src = netip.AddrPortFrom(f.real(1), 80)
			r.dst = netip.AddrPortFrom(f.laddr, 1025)
			out = append(out, r.frame(t))
		}
		// the edited services: a SYN with options, the handshake's
		// ACK with data and timestamps, a reply with SACK
		for port := uint16(81); port <= 83; port++ {
			c := e.clientPkt(f, loadbalancer.TCP, 40000, port, "S")
			c.options = []layers.TCPOption{mssOption(1460), sackPermitted(), tsOption(5, 0), nop, windowScale(7)}
			out = append(out, c.frame(t))
			c.flags, c.seq, c.ack, c.options = "PA", 1, 2, timestamps(6, 5)
			out = append(out, c.frame(t))
			r := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
				src: netip.AddrPortFrom(f.real(1), 80), dst: netip.AddrPortFrom(f.laddr, 1025), seq: 9, ack: 40,
				options: joinOptions(timestamps(7, 6), sack(50, 60))}
			out = append(out, r.frame(t))
		}
	}
	return out
}

// checkForwarded runs one frame and reports a forwarded frame that was
// malformed, or that leaves with a checksum broken by the data path.
func checkForwarded(e *testEnv, in []byte) error {
	var (
		ret uint32
		out = make([]byte, len(in)+2048) // room for kept data the SYN proxy adds
		err error
	)
	e.inNS(func() {
		opts := &ebpf.RunOptions{Data: in, DataOut: out}
		ret, err = e.dp.Program().Run(opts)
		out = opts.DataOut
	})
	if err != nil {
		// the kernel refuses frames shorter than an Ethernet header
		if len(in) < ethLen {
			return nil
		}
		return fmt.Errorf("BPF_PROG_RUN: %w", err)
	}
	v := Verdict(ret)
	if v != XDPTx && v != XDPRedirect {
		return nil
	}
	fi, err := validFrame(in, 2)
	if err != nil {
		return fmt.Errorf("forwarded (%s) a malformed frame (%v): %x", v, err, in)
	}
	ofi, err := validFrame(out, 1)
	if err != nil {
		return fmt.Errorf("forwarded frame is malformed (%v): %x", err, out)
	}
	if checksumsOK(in, fi) && !checksumsOK(out, ofi) {
		return fmt.Errorf("checksum broken by the rewrite: in %x out %x", in, out)
	}
	return nil
}

func FuzzDatapath(f *testing.F) {
	e := fuzzEnv(f)
	for _, s := range seedFrames(f, e) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if err := checkForwarded(e, frame); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRandomMutationsNeverForwardMalformed is the fuzz property over a
// fixed set of random mutations (bit flips, truncations, byte changes of
// well-formed frames), run by every `go test`.
func TestRandomMutationsNeverForwardMalformed(t *testing.T) {
	e := fuzzEnv(t)
	seeds := seedFrames(t, e)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
		switch rng.IntN(3) {
		case 0:
			b = b[:rng.IntN(len(b)+1)]
		case 1:
			for n := rng.IntN(4) + 1; n > 0; n-- {
				j := rng.IntN(len(b))
				b[j] ^= 1 << rng.IntN(8)
			}
		default:
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if err := checkForwarded(e, b); err != nil {
			t.Fatalf("mutation %d: %v", i, err)
		}
	}
}
