// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Packet tests of the client address features (bpf/lib/client_addr.h,
// tcp_edit.h). Every expected frame is built by gopacket from the fields
// the real or the client should see, so lengths and checksums are
// checked from scratch.

// caService adds the TCP service VIP:80 over real 1 (port 8080) with a
// client address way, and returns the real and the first connection's
// local IP and port.
func (e *testEnv) caService(f family, ca loadbalancer.ClientAddress) (real1, local netip.AddrPort) {
	e.t.Helper()
	real1 = netip.AddrPortFrom(f.real(1), 8080)
	k := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	err := e.dp.AddService(loadbalancer.Service{Key: k, Scheduler: loadbalancer.RoundRobin,
		LocalIPs: []netip.Addr{f.laddr}, ClientAddress: ca})
	if err != nil {
		e.t.Fatalf("add service: %v", err)
	}
	if err := e.dp.SetReals(k, []loadbalancer.Real{{Addr: real1.Addr(), Port: 8080, Weight: 1}}); err != nil {
		e.t.Fatalf("set reals: %v", err)
	}
	return real1, netip.AddrPortFrom(f.laddr, 1025)
}

func (e *testEnv) events() map[string]uint64 {
	e.t.Helper()
	ev, err := e.dp.Events()
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func mssOption(v uint16) layers.TCPOption {
	return layers.TCPOption{OptionType: layers.TCPOptionKindMSS, OptionLength: 4,
		OptionData: binary.BigEndian.AppendUint16(nil, v)}
}

var nop = layers.TCPOption{OptionType: layers.TCPOptionKindNop, OptionLength: 1}

// timestamps is NOP NOP TS, as Linux sends it.
func timestamps(val, ecr uint32) []layers.TCPOption {
	data := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, val), ecr)
	return []layers.TCPOption{nop, nop, {OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: data}}
}

// sack is NOP NOP SACK with the given edges.
func sack(edges ...uint32) []layers.TCPOption {
	var data []byte
	for _, e := range edges {
		data = binary.BigEndian.AppendUint32(data, e)
	}
	return []layers.TCPOption{nop, nop, {OptionType: layers.TCPOptionKindSACK, OptionLength: uint8(2 + len(data)), OptionData: data}}
}

// toaOption is DPVS's TOA: kind 254, the client's port, then its address.
func toaOption(client netip.AddrPort) layers.TCPOption {
	data := binary.BigEndian.AppendUint16(nil, client.Port())
	data = append(data, client.Addr().AsSlice()...)
	return layers.TCPOption{OptionType: 254, OptionLength: uint8(2 + len(data)), OptionData: data}
}

// proxyV2 is the PROXY protocol v2 header of a TCP connection, written
// from the specification: signature, 0x21 (v2, PROXY), the family with
// STREAM, the address block's length, source and destination address,
// source and destination port.
func proxyV2(client, vip netip.AddrPort) []byte {
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	h = append(h, 0x21)
	if client.Addr().Is4() {
		h = append(h, 0x11, 0, 12)
	} else {
		h = append(h, 0x21, 0, 36)
	}
	h = append(h, client.Addr().AsSlice()...)
	h = append(h, vip.Addr().AsSlice()...)
	h = binary.BigEndian.AppendUint16(h, client.Port())
	return binary.BigEndian.AppendUint16(h, vip.Port())
}

func joinOptions(sets ...[]layers.TCPOption) []layers.TCPOption {
	var out []layers.TCPOption
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// TestTOA: the real's SYN-ACK has its MSS lowered by the option's
// length; every client segment acknowledging exactly that SYN-ACK (the
// handshake's last ACK, the first data) carries the client's port and
// address in option 254 after its own options, also when its checksum
// is partial; once the client acknowledges the real's data it carries
// none; a segment whose options are full gets none and is counted.
func TestTOA(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.caService(f, loadbalancer.ClientAddressTOA)
			toaLen := uint16(8)
			if f.v6 {
				toaLen = 20
			}
			toRealMACs := func(p pkt) pkt { return p.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)) }

			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			syn.seq, syn.payload, syn.options = 1000, nil, []layers.TCPOption{mssOption(1460)}
			e.expect(syn.frame(t), XDPRedirect, toRealMACs(syn).frame(t))

			// the MSS after the timestamps and one NOP: at an odd offset
			synAck := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "SA",
				src: real1, dst: local, seq: 5000, ack: 1001,
				options: joinOptions(timestamps(7, 9), []layers.TCPOption{nop, mssOption(1460)})}
			want := synAck.translated(syn.dst, syn.src, e.clientIf.HardwareAddr, clientMAC)
			want.options = joinOptions(timestamps(7, 9), []layers.TCPOption{nop, mssOption(1460 - toaLen)})
			e.expect(synAck.frame(t), XDPRedirect, want.frame(t))

			ack := syn
			ack.flags, ack.seq, ack.ack, ack.options = "A", 1001, 5001, timestamps(10, 7)
			want = toRealMACs(ack)
			want.options = append(timestamps(10, 7), toaOption(syn.src))
			e.expect(ack.frame(t), XDPRedirect, want.frame(t))

			data := ack
			data.flags, data.payload = "PA", []byte("GET / HTTP/1.0\r\n\r\n")
			want = toRealMACs(data)
			want.options = append(timestamps(10, 7), toaOption(syn.src))
			e.expect(partialFrame(data.frame(t), f.v6, loadbalancer.TCP), XDPRedirect, want.frame(t))

			full := data
			full.options = joinOptions(timestamps(11, 7), sack(1, 2, 3, 4, 5, 6))
			e.expect(full.frame(t), XDPRedirect, toRealMACs(full).frame(t))

			later := data
			later.ack = 5001 + 100
			e.expect(later.frame(t), XDPRedirect, toRealMACs(later).frame(t))

			ev := e.events()
			if ev["toa_added"] != 2 || ev["toa_no_room"] != 1 || ev["mss_lowered"] != 1 {
				t.Errorf("events %v: want toa_added 2, toa_no_room 1, mss_lowered 1", ev)
			}
		})
	}
}

// TestProxyV2: the header goes ahead of the client's first byte, in the
// handshake's last ACK, with the real's MSS lowered by its length; a
// segment from the client's first byte gets it again, exactly once,
// until the real acknowledges it; later client sequence numbers are
// shifted by its length, and the real's acknowledgement numbers and SACK
// edges shifted back (an edge inside the header becomes the client's
// first byte); a partial checksum is completed over the grown segment.
func TestProxyV2(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.caService(f, loadbalancer.ClientAddressProxyV2)
			toRealMACs := func(p pkt) pkt { return p.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)) }

			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			syn.seq, syn.payload, syn.options = 1000, nil, []layers.TCPOption{mssOption(1460)}
			hdr := proxyV2(syn.src, syn.dst)
			L := uint32(len(hdr))
			e.expect(syn.frame(t), XDPRedirect, toRealMACs(syn).frame(t))

			synAck := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "SA",
				src: real1, dst: local, seq: 5000, ack: 1001, options: []layers.TCPOption{mssOption(1460)}}
			toClient := func(p pkt) pkt { return p.translated(syn.dst, syn.src, e.clientIf.HardwareAddr, clientMAC) }
			want := toClient(synAck)
			want.options = []layers.TCPOption{mssOption(1460 - uint16(L))}
			e.expect(synAck.frame(t), XDPRedirect, want.frame(t))

			// the handshake's last ACK carries the header
			ack := syn
			ack.flags, ack.seq, ack.ack, ack.options = "A", 1001, 5001, timestamps(10, 7)
			want = toRealMACs(ack)
			want.payload = hdr
			e.expect(ack.frame(t), XDPRedirect, want.frame(t))

			// the first data before the real acknowledged the header:
			// the header again, ahead of the data (checksum partial)
			get := ack
			get.flags, get.payload = "PA", []byte("GET / HTTP/1.0\r\n\r\n")
			want = toRealMACs(get)
			want.payload = append(append([]byte(nil), hdr...), get.payload...)
			e.expect(partialFrame(get.frame(t), f.v6, loadbalancer.TCP), XDPRedirect, want.frame(t))

			// the real acknowledges the header and the request
			got := uint32(len(get.payload))
			realAck := synAck
			realAck.flags, realAck.seq, realAck.ack, realAck.options = "A", 5001, 1001+L+got, nil
			want = toClient(realAck)
			want.ack = 1001 + got
			e.expect(realAck.frame(t), XDPRedirect, want.frame(t))

			// later data: shifted; a retransmission of the first data:
			// shifted, no header (the real has it)
			next := get
			next.seq, next.payload = 1001+got, []byte("more")
			want = toRealMACs(next)
			want.seq = next.seq + L
			e.expect(next.frame(t), XDPRedirect, want.frame(t))
			again := get
			want = toRealMACs(again)
			want.seq = again.seq + L
			e.expect(again.frame(t), XDPRedirect, want.frame(t))

			// without options (shifted as the segment is rewritten,
			// no edit), the checksum partial too
			plain := next
			plain.options, plain.seq = nil, next.seq+uint32(len(next.payload))
			plain.payload = []byte("more, in a frame gopacket does not pad")
			want = toRealMACs(plain)
			want.seq = plain.seq + L
			e.expect(partialFrame(plain.frame(t), f.v6, loadbalancer.TCP), XDPRedirect, want.frame(t))

			// SACK edges of the real: shifted back; one inside the
			// header becomes the client's first byte
			sacked := realAck
			sacked.options = joinOptions(timestamps(20, 10), sack(1001+L+100, 1001+L+200, 1001+3, 1001+L+10))
			want = toClient(sacked)
			want.ack = 1001 + got
			want.options = joinOptions(timestamps(20, 10), sack(1001+100, 1001+200, 1001, 1001+10))
			e.expect(sacked.frame(t), XDPRedirect, want.frame(t))

			// at an odd offset (one NOP before the SACK), the checksum
			// sees the edges' bytes in other words
			odd := realAck
			odd.options = joinOptions(timestamps(21, 10), sack(1001+L+300, 1001+L+400)[1:])
			want = toClient(odd)
			want.ack = 1001 + got
			want.options = joinOptions(timestamps(21, 10), sack(1001+300, 1001+400)[1:])
			e.expect(odd.frame(t), XDPRedirect, want.frame(t))

			if ev := e.events(); ev["proxy_header_sent"] != 2 || ev["mss_lowered"] != 1 {
				t.Errorf("events %v: want proxy_header_sent 2, mss_lowered 1", ev)
			}
		})
	}
}

// TestClientAddressOnlyForTCP: the model refuses a UDP service with a
// client address way.
func TestClientAddressOnlyForTCP(t *testing.T) {
	s := loadbalancer.Service{Key: loadbalancer.ServiceKey{VIP: vip4, Port: 53, Proto: loadbalancer.UDP},
		ClientAddress: loadbalancer.ClientAddressProxyV2}
	if err := s.Validate(); err == nil {
		t.Fatal("a UDP service with proxy-v2 was accepted")
	}
}
