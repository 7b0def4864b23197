// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// l4Offset is where the transport header of a frame built by pkt.frame
// starts, and l4CsumOffset where its checksum lies within it.
func l4Offset(v6 bool) int {
	if v6 {
		return ethLen + ipv6Len
	}
	return ethLen + ipv4Len
}

func l4CsumOffset(p loadbalancer.Proto) int {
	if p == loadbalancer.TCP {
		return 16
	}
	return 6
}

// pseudoSum is the folded TCP/UDP pseudo-header sum of a frame built by
// pkt.frame, computed here from the bytes (RFC 793 / RFC 8200 8.1).
func pseudoSum(b []byte, v6 bool, proto loadbalancer.Proto) uint16 {
	l4 := l4Offset(v6)
	var sum uint32
	if v6 {
		sum = onesSum(0, b[ethLen+8:ethLen+40])
	} else {
		sum = onesSum(0, b[ethLen+12:ethLen+20])
	}
	return fold(sum + uint32(proto) + uint32(len(b)-l4))
}

// partialFrame turns a frame into what a sender with TX checksum offload
// hands over (CHECKSUM_PARTIAL): the L4 checksum field holds only the
// folded pseudo-header sum.
func partialFrame(b []byte, v6 bool, proto loadbalancer.Proto) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint16(out[l4Offset(v6)+l4CsumOffset(proto):], pseudoSum(out, v6, proto))
	return out
}

// TestPartialChecksumsAreCompleted: frames with a partial checksum, in
// both directions, both families, TCP and UDP, leave with the complete
// checksum of the rewritten segment (the expected frame is built from
// scratch by gopacket), including a segment of odd length.
func TestPartialChecksumsAreCompleted(t *testing.T) {
	for _, f := range families {
		for _, proto := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			t.Run(f.name+"/"+proto.String(), func(t *testing.T) {
				e := newEnv(t, Options{})
				real1, local := e.oneRealService(f, proto)

				first := e.clientPkt(f, proto, 40000, 80, "S")
				first.payload = []byte("an odd-length payload of 37 bytes....")
				e.expect(partialFrame(first.frame(t), f.v6, proto), XDPRedirect,
					first.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))

				reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: proto, flags: "SA",
					src: real1, dst: local, payload: make([]byte, 1000)}
				for i := range reply.payload {
					reply.payload[i] = byte(i * 7)
				}
				e.expect(partialFrame(reply.frame(t), f.v6, proto), XDPRedirect,
					reply.translated(first.dst, first.src, e.clientIf.HardwareAddr, clientMAC).frame(t))
			})
		}
	}
}

// TestCompleteChecksumEqualToPseudoSum: a complete checksum that happens
// to equal the pseudo-header sum looks partial; summing it whole still
// gives the right checksum.
func TestCompleteChecksumEqualToPseudoSum(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.oneRealService(f, loadbalancer.TCP)
			in := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			// choose the first two payload bytes so that the complete
			// checksum equals the pseudo-header sum
			found := false
			for w := 0; w < 1<<16 && !found; w++ {
				in.payload = []byte{byte(w >> 8), byte(w), 'x', 'l', 'b'}
				b := in.frame(t)
				l4 := l4Offset(f.v6)
				found = binary.BigEndian.Uint16(b[l4+16:]) == pseudoSum(b, f.v6, loadbalancer.TCP)
			}
			if !found {
				t.Fatal("no payload gives a checksum equal to the pseudo-header sum")
			}
			e.expect(in.frame(t), XDPRedirect,
				in.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))
		})
	}
}

// TestUDPShorterThanIPPayload: a datagram shorter than its IP payload
// (padding after it) is forwarded, its checksum over its own length
// (lengths beyond the payload or below the header: malformed_test).
func TestUDPShorterThanIPPayload(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	real1, local := e.oneRealService(f, loadbalancer.UDP)
	in := e.clientPkt(f, loadbalancer.UDP, 40000, 80, "")
	b := in.frame(t)
	// two bytes of IP padding after the datagram
	b = append(b, 0, 0)
	binary.BigEndian.PutUint16(b[ethLen+2:], uint16(len(b)-ethLen))
	binary.BigEndian.PutUint16(b[ethLen+10:], 0)
	binary.BigEndian.PutUint16(b[ethLen+10:], ^fold(onesSum(0, b[ethLen:ethLen+ipv4Len])))
	want := in.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t)
	want = append(want, 0, 0)
	binary.BigEndian.PutUint16(want[ethLen+2:], uint16(len(want)-ethLen))
	binary.BigEndian.PutUint16(want[ethLen+10:], 0)
	binary.BigEndian.PutUint16(want[ethLen+10:], ^fold(onesSum(0, want[ethLen:ethLen+ipv4Len])))
	e.expect(b, XDPRedirect, want)
}
