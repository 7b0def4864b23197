// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// testLab builds a lab with one real, named after this process, removed
// at the end even when the test fails.
func testLab(t *testing.T) topo.Topology {
	t.Helper()
	testenv.RequireRoot(t, "builds network namespaces and runs XDP")
	topology := topo.Topology{Name: fmt.Sprintf("xlbb%d", os.Getpid()), Net: uint8(100 + os.Getpid()%50), Reals: 1}
	t.Cleanup(func() {
		if err := topology.Down(); err != nil {
			t.Errorf("remove lab: %v", err)
		}
	})
	if err := topology.Up(); err != nil {
		t.Fatal(err)
	}
	return topology
}

func mustMAC(t *testing.T, ns, ifname string) net.HardwareAddr {
	t.Helper()
	mac, err := netns.HardwareAddr(ns, ifname)
	if err != nil {
		t.Fatal(err)
	}
	return mac
}

// TestGeneratorIntoSink sends paced frames from the client into a sink on
// the balancer's interface: the generator sends exactly what was asked,
// and the sink counts exactly that, for each template.
func TestGeneratorIntoSink(t *testing.T) {
	topology := testLab(t)
	gen, err := NewGenerator()
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	sink, err := NewSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	if err := sink.Attach(topology.LB(), "l0"); err != nil {
		t.Fatal(err)
	}
	src, dst := mustMAC(t, topology.Client(), "c0"), mustMAC(t, topology.LB(), "l0")
	for _, tc := range []struct {
		name  string
		frame Frame
		flows int
		vary  Vary
	}{
		{"udp4 64B one flow", Frame{Size: 64, L4: UDP, Src: netip.AddrPortFrom(topology.ClientAddr(), 1000), Dst: netip.AddrPortFrom(topology.VIP(), 80)}, 1, 0},
		{"udp4 1518B l3-both 1k flows", Frame{Size: 1518, L4: UDP, Src: netip.AddrPortFrom(topology.ClientAddr(), 1000), Dst: netip.AddrPortFrom(topology.VIP(), 80)}, 1000, VarySrcIP | VaryDstIP},
		{"tcp6 ack l4-src", Frame{Size: 128, L4: TCPAck, Src: netip.AddrPortFrom(topology.ClientAddr6(), 1000), Dst: netip.AddrPortFrom(topology.VIP6(), 80)}, 500, VarySrcPort},
		{"udp4 IMIX l3-src", Frame{Size: IMIX, L4: UDP, Src: netip.AddrPortFrom(topology.ClientAddr(), 1000), Dst: netip.AddrPortFrom(topology.VIP(), 80)}, 100, VarySrcIP},
		{"udp6 stamped timed", Frame{Size: 128, L4: UDP, Stamp: true, Src: netip.AddrPortFrom(topology.ClientAddr6(), 1000), Dst: netip.AddrPortFrom(topology.VIP6(), 80)}, 10, VarySrcPort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.frame.SrcMAC, tc.frame.DstMAC = src, dst
			if err := gen.Configure(tc.frame, tc.flows, tc.vary); err != nil {
				t.Fatal(err)
			}
			before, err := sink.Count()
			if err != nil {
				t.Fatal(err)
			}
			if err := sink.TimeFrames(tc.frame.Stamp); err != nil {
				t.Fatal(err)
			}
			const rate, dur = 20000, 500 * time.Millisecond
			if _, err := gen.Send(context.Background(), SendOptions{Namespace: topology.Client(), Interface: "c0", Rate: rate, Duration: dur}); err != nil {
				t.Fatal(err)
			}
			sent, bytes, err := gen.Sent()
			if err != nil {
				t.Fatal(err)
			}
			// 10000 frames: for IMIX 833 whole cycles of 12 and the
			// cycle's first 4 (two 64-byte frames, a 570, a 64)
			want, wantBytes := uint64(rate*dur.Seconds()), uint64(rate*dur.Seconds())*uint64(tc.frame.Size-FCS)
			if tc.frame.Size == IMIX {
				wantBytes = 833*(7*60+4*566+1514) + 3*60 + 566
			}
			if sent != want || bytes != wantBytes {
				t.Fatalf("sent %d frames, %d bytes; want %d, %d bytes", sent, bytes, want, wantBytes)
			}
			time.Sleep(100 * time.Millisecond)
			after, err := sink.Count()
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Packets - before.Packets; got != sent {
				t.Fatalf("sink counted %d, generator sent %d", got, sent)
			}
			lat, err := sink.Latency()
			if err != nil {
				t.Fatal(err)
			}
			// timed: every frame, in microseconds on one host (a
			// second is a clock mixed up); untimed: none
			if tc.frame.Stamp != (lat.Frames == sent) || tc.frame.Stamp && !(0 < lat.MinNs && lat.MinNs <= lat.P50Ns &&
				lat.P50Ns <= lat.P99Ns && lat.P99Ns <= lat.MaxNs && lat.AvgNs <= lat.MaxNs && lat.MaxNs < 1e9) {
				t.Errorf("stamped %v: latency %+v of %d frames sent", tc.frame.Stamp, lat, sent)
			}
			t.Logf("latency %+v", lat)
		})
	}
	// Unpaced, for the log: how fast one sender goes into an XDP sink.
	f := Frame{Size: 64, L4: UDP, SrcMAC: src, DstMAC: dst, Src: netip.AddrPortFrom(topology.ClientAddr(), 1000), Dst: netip.AddrPortFrom(topology.VIP(), 80)}
	if err := gen.Configure(f, 1, 0); err != nil {
		t.Fatal(err)
	}
	took, err := gen.Send(context.Background(), SendOptions{Namespace: topology.Client(), Interface: "c0", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sent, _, _ := gen.Sent()
	t.Logf("unpaced: %d frames in %v (%.2f Mpps)", sent, took, float64(sent)/took.Seconds()/1e6)
}

// TestGeneratorIMIXFrames runs the generator through BPF_PROG_RUN 24
// times on an IMIX template: each frame is, byte for byte, the frame Go
// builds at one of the IMIX sizes (headers, zero payload after the magic,
// checksums), 7:4:1 in every 12, whatever length the buffer came in at.
func TestGeneratorIMIXFrames(t *testing.T) {
	testenv.RequireRoot(t, "runs BPF programs")
	gen, err := NewGenerator()
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	f := Frame{Size: IMIX, L4: UDP, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddrPort("10.1.0.2:1000"), Dst: netip.MustParseAddrPort("10.0.0.10:80")}
	if err := gen.Configure(f, 1, 0); err != nil {
		t.Fatal(err)
	}
	built := map[int][]byte{} // by length without FCS
	for _, size := range IMIXSizes {
		f.Size = size
		tmpl, err := f.build()
		if err != nil {
			t.Fatal(err)
		}
		built[len(tmpl.data)] = tmpl.data
	}
	unpaced(t, gen)
	count := map[int]int{}
	in := gen.tmpl.data // the live frame: the largest
	for i := 0; i < 24; i++ {
		opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(gen.tmpl.data))}
		ret, err := gen.objs.XdpGen.Run(opts)
		if err != nil {
			t.Fatal(err)
		}
		out := opts.DataOut // cut to the output's length
		want, ok := built[len(out)]
		if ret != 3 /* XDP_TX */ || !ok || !bytes.Equal(out, want) {
			t.Fatalf("run %d: verdict %d, %d bytes: %x\nwant one of the IMIX frames", i, ret, len(out), out)
		}
		count[len(out)+FCS]++
		in = out // the next run starts from this length, as a recycled page does
	}
	if count[64] != 14 || count[570] != 8 || count[1518] != 2 {
		t.Errorf("24 frames by size %v, want 14, 8 and 2 of 64, 570 and 1518", count)
	}
}

// TestGeneratorStampsFrames: with Stamp, each frame carries its send
// time (the monotonic clock, big-endian) after the magic and its UDP or
// TCP checksum still verifies; a frame too small for it is refused.
func TestGeneratorStampsFrames(t *testing.T) {
	testenv.RequireRoot(t, "runs BPF programs")
	gen, err := NewGenerator()
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	for _, tc := range []struct {
		name string
		f    Frame
	}{
		{"udp4 64", Frame{Size: 64, L4: UDP, Src: netip.MustParseAddrPort("10.1.0.2:1000"), Dst: netip.MustParseAddrPort("10.0.0.10:80")}},
		{"tcp6 ack 128", Frame{Size: 128, L4: TCPAck, Src: netip.MustParseAddrPort("[fd00:1::2]:1000"), Dst: netip.MustParseAddrPort("[fd00::10]:80")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.SrcMAC, tc.f.DstMAC, tc.f.Stamp = net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}, true
			if err := gen.Configure(tc.f, 1, 0); err != nil {
				t.Fatal(err)
			}
			unpaced(t, gen)
			var ts unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			before := uint64(ts.Nano())
			opts := &ebpf.RunOptions{Data: gen.tmpl.data, DataOut: make([]byte, len(gen.tmpl.data))}
			ret, err := gen.objs.XdpGen.Run(opts)
			if err != nil || ret != 3 {
				t.Fatalf("verdict %d, %v; want XDP_TX", ret, err)
			}
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			out, off := opts.DataOut, gen.tmpl.payloadOff
			sent := binary.BigEndian.Uint64(out[off+4:])
			if binary.BigEndian.Uint32(out[off:]) != Magic || sent < before || sent > uint64(ts.Nano()) {
				t.Errorf("magic %x, send time %d, want between %d and %d", out[off:off+4], sent, before, ts.Nano())
			}
			// the frame is the template but for those 8 bytes and the
			// checksum, which verifies
			want := bytes.Clone(gen.tmpl.data)
			copy(want[off+4:], out[off+4:off+12])
			copy(want[gen.tmpl.csumOff:], out[gen.tmpl.csumOff:gen.tmpl.csumOff+2])
			if !bytes.Equal(out, want) {
				t.Errorf("frame changed beyond the send time and checksum:\n%x\n%x", out, want)
			}
			if sum := l4Sum(out, gen.tmpl); sum != 0xffff {
				t.Errorf("L4 checksum does not verify: sum %#x", sum)
			}
		})
	}
	f := Frame{Size: 64, L4: TCPAck, Stamp: true, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddrPort("10.1.0.2:1000"), Dst: netip.MustParseAddrPort("10.0.0.10:80")}
	if err := gen.Configure(f, 1, 0); err == nil {
		t.Error("a 64-byte TCP frame took a send time it has no room for")
	}
}

// l4Sum is the ones' complement sum of a frame's TCP or UDP segment and
// pseudo-header: 0xffff when its checksum is right.
func l4Sum(frame []byte, t template) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	seg := frame[t.l4Off:]
	if t.ipv6 {
		add(frame[t.ipOff+8 : t.ipOff+40])
		sum += uint32(frame[t.ipOff+6])
	} else {
		add(frame[t.ipOff+12 : t.ipOff+20])
		sum += uint32(frame[t.ipOff+9])
		seg = frame[t.l4Off : t.ipOff+int(binary.BigEndian.Uint16(frame[t.ipOff+2:]))]
	}
	sum += uint32(len(seg))
	add(seg)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// unpaced sets every CPU's sender state so that the generator sends at
// each BPF_PROG_RUN, whenever it runs.
func unpaced(t *testing.T, gen *Generator) {
	t.Helper()
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	states := make([]genGenState, n)
	for i := range states {
		states[i].Pace.StopNs = math.MaxUint64
	}
	if err := gen.objs.GenStates.Put(uint32(0), states); err != nil {
		t.Fatal(err)
	}
}
