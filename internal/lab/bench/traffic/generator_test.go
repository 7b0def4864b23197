// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

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
			const rate, dur = 20000, 500 * time.Millisecond
			if _, err := gen.Send(context.Background(), SendOptions{Namespace: topology.Client(), Interface: "c0", Rate: rate, Duration: dur}); err != nil {
				t.Fatal(err)
			}
			sent, bytes, err := gen.Sent()
			if err != nil {
				t.Fatal(err)
			}
			want := uint64(rate * dur.Seconds())
			if sent != want || bytes != sent*uint64(tc.frame.Size-FCS) {
				t.Fatalf("sent %d frames, %d bytes; want %d of %d bytes", sent, bytes, want, tc.frame.Size-FCS)
			}
			time.Sleep(100 * time.Millisecond)
			after, err := sink.Count()
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Packets - before.Packets; got != sent {
				t.Fatalf("sink counted %d, generator sent %d", got, sent)
			}
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
