// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestSinkReflects runs the sink through BPF_PROG_RUN: a bench frame is
// counted and dropped; in reflect mode it goes back (a redirect) with
// MACs, addresses and ports swapped and its checksums as they were,
// which is the frame built the other way round; a frame without the
// magic passes.
func TestSinkReflects(t *testing.T) {
	testenv.RequireRoot(t, "runs BPF programs")
	s, err := NewSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	for _, tc := range []struct {
		name     string
		src, dst string
		l4       L4
	}{
		{"udp4", "10.1.0.2:1000", "10.11.0.2:80", UDP},
		{"tcp6", "[fd00:1::2]:1000", "[fd00:11::2]:80", TCPAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := netip.MustParseAddrPort(tc.src), netip.MustParseAddrPort(tc.dst)
			there, err := Frame{Size: 128, L4: tc.l4, SrcMAC: a, DstMAC: b, Src: src, Dst: dst}.build()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Frame{Size: 128, L4: tc.l4, SrcMAC: b, DstMAC: a, Src: dst, Dst: src}.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, reflect := range []bool{false, true} {
				if err := s.Reflect(reflect); err != nil {
					t.Fatal(err)
				}
				before, _ := s.Count()
				opts := &ebpf.RunOptions{Data: there.data, DataOut: make([]byte, len(there.data))}
				ret, err := s.objs.XdpSink.Run(opts)
				if err != nil {
					t.Fatal(err)
				}
				after, _ := s.Count()
				want, wantRet := there.data, uint32(1) // XDP_DROP
				if reflect {
					want, wantRet = back.data, 4 // XDP_REDIRECT
				}
				if ret != wantRet || !bytes.Equal(opts.DataOut, want) || after.Packets != before.Packets+1 {
					t.Errorf("reflect %v: verdict %d (want %d), counted %d\n got %x\nwant %x", reflect, ret, wantRet,
						after.Packets-before.Packets, opts.DataOut, want)
				}
			}
		})
	}
	other := bytes.Repeat([]byte{0}, 60)
	other[12], other[13] = 0x08, 0x06 // ARP
	if ret, err := s.objs.XdpSink.Run(&ebpf.RunOptions{Data: other}); err != nil || ret != 2 {
		t.Errorf("ARP frame: verdict %d, %v; want XDP_PASS", ret, err)
	}
}
