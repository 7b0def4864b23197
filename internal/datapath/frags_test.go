// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// jumboPayload is the payload of a 9000-byte IPv4 TCP packet.
const jumboPayload = 9000 - ipv4Len - 20

// newMultiBufferEnv is newEnv with the multi-buffer program, every veth of
// the namespace at MTU 9000.
func newMultiBufferEnv(t *testing.T) *testEnv {
	t.Helper()
	if !xdpfrags.Supported() {
		testenv.Unavailable(t, "this kernel has no multi-buffer XDP (Linux 5.18)")
	}
	e := newEnv(t, Options{})
	if !e.dp.MultiBuffer() {
		t.Fatal("the kernel has multi-buffer XDP, the program was loaded without")
	}
	for _, ifname := range []string{progns.ClientIf, progns.ClientIf + "p", progns.RealIf, progns.RealIf + "p"} {
		ipCmd(t, "-n", e.ns, "link", "set", "dev", ifname, "mtu", "9000")
	}
	return e
}

// patterned returns n bytes that differ from one another, so that a byte
// lost, doubled or moved between buffers shows in the output.
func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// TestMultiBufferFramesAreForwarded: 9000-byte packets (IPv4 and IPv6,
// TCP and UDP) whose payload lies in several buffers are rewritten and
// redirected with their bytes intact, for several cuts of the first
// buffer (the kernel's own, even and odd ones); a partial checksum is
// completed over every buffer, in both directions.
func TestMultiBufferFramesAreForwarded(t *testing.T) {
	for _, f := range families {
		for _, proto := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			t.Run(f.name+"/"+proto.String(), func(t *testing.T) {
				e := newMultiBufferEnv(t)
				real1, local := e.oneRealService(f, proto)
				payload := patterned(jumboPayload - 40) // room for IPv6's longer header
				for i, linear := range []int{0, 1000, 777, 200} {
					e.linear = linear
					name := fmt.Sprintf("first buffer %d", linear)
					first := e.clientPkt(f, proto, uint16(40000+i), 80, "S")
					first.payload = payload
					in, want := first.frame(t), first.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))
					want.src = netip.AddrPortFrom(local.Addr(), local.Port()+uint16(i))
					e.with(t).expect(in, XDPRedirect, want.frame(t))
					e.with(t).expect(partialFrame(in, f.v6, proto), XDPRedirect, want.frame(t))

					reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: proto, flags: "SA",
						src: real1, dst: want.src, payload: payload[1:]} // odd length
					back := reply.translated(first.dst, first.src, e.clientIf.HardwareAddr, clientMAC).frame(t)
					e.with(t).expect(partialFrame(reply.frame(t), f.v6, proto), XDPRedirect, back)
					if t.Failed() {
						t.Fatalf("%s: failed", name)
					}
				}
			})
		}
	}
}

// TestMultiBufferHeaderSplit: a frame whose headers run past its first
// buffer is dropped and counted as header_split, never read in pieces;
// the same bytes in one buffer are forwarded.
func TestMultiBufferHeaderSplit(t *testing.T) {
	e := newMultiBufferEnv(t)
	v4, v6 := families[0], families[1]
	e.oneRealService(v4, loadbalancer.TCP)
	e.oneRealService(v6, loadbalancer.UDP)
	big := func(f family, proto loadbalancer.Proto) []byte {
		p := e.clientPkt(f, proto, 40000, 80, "S")
		p.payload = patterned(5000)
		return p.frame(t)
	}
	for _, tc := range []struct {
		name   string
		frame  []byte
		linear int
	}{
		{"ipv4 header", big(v4, loadbalancer.TCP), ethLen + 10},
		{"tcp header", big(v4, loadbalancer.TCP), ethLen + ipv4Len + 10},
		{"tcp options", func() []byte {
			b := big(v4, loadbalancer.TCP)
			b[ethLen+ipv4Len+12] = 0x60 // 24 bytes: a NOP option follows
			b[ethLen+ipv4Len+20] = 1
			return b
		}(), ethLen + ipv4Len + 22},
		{"ipv6 header", big(v6, loadbalancer.UDP), ethLen + 30},
		{"udp header", big(v6, loadbalancer.UDP), ethLen + ipv6Len + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.linear = tc.linear
			e.with(t).expectDrop(tc.frame, DropHeaderSplit)
		})
	}
}

// TestMultiBufferTooBig: a multi-buffer packet above the MTU toward the
// reals gets fragmentation needed / packet too big with that MTU,
// quoting the packet's start; the frame is cut to the error, its other
// buffers given back. When the first buffer does not hold the quote, the
// packet is dropped as too_big.
func TestMultiBufferTooBig(t *testing.T) {
	const mtu = 1500
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newMultiBufferEnv(t)
			e.oneRealService(f, loadbalancer.TCP)
			realNet := "10.0.2.0/24"
			if f.v6 {
				realNet = "fd00:2::/64"
			}
			e.routeMTU(t, f.v6, realNet, progns.RealIf, mtu)
			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			e.expect(syn.frame(t), XDPRedirect, nil)
			big := syn
			big.flags, big.payload = "A", patterned(8000)
			in := big.frame(t)
			e.linear = 1000
			e.expect(in, XDPTx, tooBig(t, in, f.v6, mtu, e.clientIf.HardwareAddr, clientMAC))

			e.linear = ethLen + 100
			before, _ := e.dp.Drops()
			e.expect(in, XDPDrop, nil)
			if after, _ := e.dp.Drops(); after[DropTooBig] != before[DropTooBig]+1 {
				t.Errorf("too_big drops %d -> %d, want one more", before[DropTooBig], after[DropTooBig])
			}
		})
	}
}
