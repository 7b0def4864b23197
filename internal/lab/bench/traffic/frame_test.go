// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/lab/xdpsend"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestGeneratorFrames runs the generator through BPF_PROG_RUN (not live)
// and compares each flow's frame byte for byte with the same frame built
// by gopacket with its checksums computed from scratch.
func TestGeneratorFrames(t *testing.T) {
	testenv.RequireRoot(t, "loads BPF programs")
	gen, err := NewGenerator()
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	addMAC := func(m net.HardwareAddr, k int) net.HardwareAddr {
		low := int(m[3])<<16 | int(m[4])<<8 | int(m[5]) + k
		return net.HardwareAddr{m[0], m[1], m[2], byte(low >> 16), byte(low >> 8), byte(low)}
	}
	// flows count in the address's last 32 bits, wrapping there
	addIP := func(a netip.Addr, k int) netip.Addr {
		b := a.AsSlice()
		n := len(b)
		low := binary.BigEndian.Uint32(b[n-4:]) + uint32(k)
		binary.BigEndian.PutUint32(b[n-4:], low)
		out, _ := netip.AddrFromSlice(b)
		return out
	}
	for _, tc := range []struct {
		name  string
		frame Frame
		vary  Vary
	}{
		{"udp4 l3-both l4-both", Frame{Size: 64, L4: UDP, Src: netip.MustParseAddrPort("10.1.1.2:1000"), Dst: netip.MustParseAddrPort("10.1.0.10:80")}, VarySrcIP | VaryDstIP | VarySrcPort | VaryDstPort},
		{"udp4 across a byte carry", Frame{Size: 128, L4: UDP, Src: netip.MustParseAddrPort("10.1.1.254:65534"), Dst: netip.MustParseAddrPort("10.1.0.255:80")}, VarySrcIP | VaryDstIP | VarySrcPort},
		{"tcp4 syn l2-both", Frame{Size: 64, L4: TCPSyn, Src: netip.MustParseAddrPort("10.1.1.2:1000"), Dst: netip.MustParseAddrPort("10.1.0.10:80")}, VarySrcMAC | VaryDstMAC},
		{"tcp6 ack l3-src l4-dst", Frame{Size: 96, L4: TCPAck, Src: netip.MustParseAddrPort("[fd00::2]:1000"), Dst: netip.MustParseAddrPort("[fd00::10]:80")}, VarySrcIP | VaryDstPort},
		{"udp6 1518 l3-dst", Frame{Size: 1518, L4: UDP, Src: netip.MustParseAddrPort("[fd00::2]:1000"), Dst: netip.MustParseAddrPort("[fd00::ffff:fffe]:80")}, VaryDstIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.frame.SrcMAC, tc.frame.DstMAC = mac("02:00:00:00:00:fe"), mac("02:00:00:ff:ff:ff")
			const flows = 5
			if err := gen.Configure(tc.frame, flows, tc.vary); err != nil {
				t.Fatal(err)
			}
			// every CPU runs, unpaced, without a stop
			states := make([]genGenState, xdpsend.PossibleCPUs())
			for i := range states {
				states[i].Pace.StopNs = math.MaxUint64
			}
			if err := gen.objs.GenStates.Put(uint32(0), states); err != nil {
				t.Fatal(err)
			}
			in := gen.tmpl.data
			for k := 0; k < 2*flows; k++ {
				out := make([]byte, len(in))
				ret, err := gen.objs.XdpGen.Run(&ebpf.RunOptions{Data: in, DataOut: out, CPU: 0})
				if err != nil || ret != 3 /* XDP_TX */ {
					t.Fatalf("run %d: %v, %v", k, ret, err)
				}
				flow := k % flows
				want := tc.frame
				v := tc.vary
				if v&VarySrcMAC != 0 {
					want.SrcMAC = addMAC(want.SrcMAC, flow)
				}
				if v&VaryDstMAC != 0 {
					want.DstMAC = addMAC(want.DstMAC, flow)
				}
				src, dst := want.Src.Addr(), want.Dst.Addr()
				sport, dport := want.Src.Port(), want.Dst.Port()
				if v&VarySrcIP != 0 {
					src = addIP(src, flow)
				}
				if v&VaryDstIP != 0 {
					dst = addIP(dst, flow)
				}
				if v&VarySrcPort != 0 {
					sport += uint16(flow)
				}
				if v&VaryDstPort != 0 {
					dport += uint16(flow)
				}
				want.Src, want.Dst = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
				exp, err := want.build()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, exp.data) {
					t.Fatalf("flow %d (run %d):\ngot  %s\nwant %s", flow, k, hex.EncodeToString(out[:min(len(out), 80)]), hex.EncodeToString(exp.data[:min(len(out), 80)]))
				}
			}
		})
	}
}

// TestFrameErrors covers the frames Configure refuses.
func TestFrameErrors(t *testing.T) {
	v4, v6 := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("[fd00::1]:1")
	for _, tc := range []struct {
		name string
		f    Frame
		want string
	}{
		{"mixed families", Frame{Size: 64, L4: UDP, Src: v4, Dst: v6}, "not of one family"},
		{"too small", Frame{Size: 63, L4: UDP, Src: v4, Dst: v4}, "frame size 63"},
		{"too big", Frame{Size: 9019, L4: UDP, Src: v4, Dst: v4}, "frame size 9019"},
		{"v6 tcp in 64", Frame{Size: 64, L4: TCPAck, Src: v6, Dst: v6}, "at least 82"},
		{"bad l4", Frame{Size: 64, L4: "sctp", Src: v4, Dst: v4}, `"sctp"`},
	} {
		if _, err := tc.f.build(); err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestFrameSizeNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{{"64", 64, false}, {"imix", IMIX, false}, {"IMIX", IMIX, false}, {"63", 0, true}, {"9019", 0, true}, {"big", 0, true}} {
		got, err := ParseSize(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	if m := MeanSize(IMIX); m < 353.8 || m > 353.9 || MeanSize(512) != 512 {
		t.Errorf("MeanSize: IMIX %v, 512 %v; want 353.83 and 512", m, MeanSize(512))
	}
	if SizeName(IMIX) != "IMIX" || SizeName(1518) != "1518" {
		t.Errorf("SizeName: %q %q", SizeName(IMIX), SizeName(1518))
	}
}

// TestLatencyOf: the percentiles of a histogram are their bucket's
// middle, kept within the extremes seen; the buckets are those of
// bpf/bench/sink.bpf.c lat_bucket (16 a power of two).
func TestLatencyOf(t *testing.T) {
	for b, want := range map[int][2]float64{3: {3, 4}, 16: {16, 17}, 31: {31, 32}, 32: {32, 34}, 48: {64, 68}, 63: {124, 128}} {
		if lo, hi := bucketBounds(b); lo != want[0] || hi != want[1] {
			t.Errorf("bucket %d: [%v, %v), want %v", b, lo, hi, want)
		}
	}
	var h sinkSinkLatency
	h.Count, h.SumNs, h.MinNs, h.MaxNs = 100, 100*70, 33, 127
	h.Buckets[32], h.Buckets[48], h.Buckets[63] = 10, 85, 5 // [32,34) [64,68) [124,128)
	l := latencyOf(&h)
	if l.Frames != 100 || l.MinNs != 33 || l.AvgNs != 70 || l.P50Ns != 66 || l.P99Ns != 126 || l.MaxNs != 127 {
		t.Errorf("latencyOf: %+v", l)
	}
	if l := latencyOf(&sinkSinkLatency{}); l != (Latency{}) {
		t.Errorf("empty histogram: %+v", l)
	}
}
