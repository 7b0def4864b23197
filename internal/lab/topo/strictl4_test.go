// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// rawSend sends one transport segment (header and payload as given, the
// checksum computed here) to dst from a raw socket of proto; the kernel
// adds the IPv4 header.
func rawSend(src, dst netip.Addr, proto int, seg []byte, csumOff int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, proto)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var sum uint32
	for _, b := range [][]byte{src.AsSlice(), dst.AsSlice(), {0, byte(proto)}, binary.BigEndian.AppendUint16(nil, uint16(len(seg)))} {
		sum = onesSum(sum, b)
	}
	binary.BigEndian.PutUint16(seg[csumOff:], ^fold(onesSum(sum, seg)))
	sa := &syscall.SockaddrInet4{Addr: dst.As4()}
	return syscall.Sendto(fd, seg, 0, sa)
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

// TestStrictL4 sends what IPVS would not forward either, from the client
// to the VIP: TCP segments of no connection other than a SYN, and UDP
// datagrams whose length field is below the header or beyond the packet.
// Each is dropped and counted by its reason, and a real connection
// afterwards works.
func TestStrictL4(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 1, "rr")
	drops := func() map[string]uint64 {
		t.Helper()
		st, err := d.Client().Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Drops
	}
	tcp := func(flags byte) []byte {
		seg := make([]byte, 20+4)
		binary.BigEndian.PutUint16(seg[0:], 41000)
		binary.BigEndian.PutUint16(seg[2:], ServicePort)
		seg[12], seg[13] = 5<<4, flags
		binary.BigEndian.PutUint16(seg[14:], 1024)
		return seg
	}
	udp := func(length uint16) []byte {
		seg := make([]byte, 8+8)
		binary.BigEndian.PutUint16(seg[0:], 41000)
		binary.BigEndian.PutUint16(seg[2:], ServicePort)
		binary.BigEndian.PutUint16(seg[4:], length)
		return seg
	}
	for _, tc := range []struct {
		name  string
		proto int
		seg   []byte
		csum  int
		want  string
	}{
		{"tcp ack", syscall.IPPROTO_TCP, tcp(0x10), 16, "tcp_not_syn"},
		{"tcp no flags", syscall.IPPROTO_TCP, tcp(0), 16, "tcp_not_syn"},
		{"tcp rst", syscall.IPPROTO_TCP, tcp(0x04), 16, "tcp_not_syn"},
		{"tcp syn-ack", syscall.IPPROTO_TCP, tcp(0x12), 16, "tcp_not_syn"},
		{"udp length 7", syscall.IPPROTO_UDP, udp(7), 6, "udp_length"},
		{"udp length beyond the packet", syscall.IPPROTO_UDP, udp(17), 6, "udp_length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := drops()
			err := netns.Run(topo.Client(), func() error {
				return rawSend(topo.ClientAddr(), topo.VIP(), tc.proto, tc.seg, tc.csum)
			})
			if err != nil {
				t.Fatal(err)
			}
			var after map[string]uint64
			for i := 0; i < 20; i++ { // at most 2 s for the frame to arrive
				if after = drops(); after[tc.want] > before[tc.want] {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if after[tc.want] != before[tc.want]+1 {
				t.Errorf("%s drops %d -> %d, want one more (all drops now %v)", tc.want, before[tc.want], after[tc.want], nonZero(after))
			}
		})
	}
	err := netns.Run(topo.Client(), func() error {
		_, err := httpGet(ctx, netip.AddrPortFrom(topo.VIP(), ServicePort).String())
		return err
	})
	if err != nil {
		t.Errorf("a real connection after the strays: %v", err)
	}
}
