// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/workers"
)

// TestSteerSetMatchesC ties loadbalancer.MaxWorkers to XLB_MAX_WORKERS
// and workers.Set to struct steer_set.
func TestSteerSetMatchesC(t *testing.T) {
	if n := len(xlbSteerSet{}.Cpu); n != loadbalancer.MaxWorkers {
		t.Fatalf("struct steer_set has %d CPUs, loadbalancer.MaxWorkers is %d", n, loadbalancer.MaxWorkers)
	}
	if c, g := unsafe.Sizeof(xlbSteerSet{}), unsafe.Sizeof(workers.Set{}); c != g {
		t.Fatalf("struct steer_set is %d bytes, workers.Set %d", c, g)
	}
}

// steerFrame is a frame of the flow src -> dst, a fragment of an IPv4
// datagram when fragOffset or moreFrags say so (no ports after the
// first).
func steerFrame(t *testing.T, src, dst netip.AddrPort, proto loadbalancer.Proto, fragOffset uint16, moreFrags bool) []byte {
	t.Helper()
	if fragOffset == 0 && !moreFrags {
		return pkt{srcMAC: clientMAC, dstMAC: routerMAC, src: src, dst: dst, proto: proto, flags: "S"}.frame(t)
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 7, Protocol: layers.IPProtocolUDP,
		FragOffset: fragOffset, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	if moreFrags {
		ip.Flags = layers.IPv4MoreFragments
	}
	payload := make([]byte, 16)
	if fragOffset == 0 { // the first fragment starts with the UDP header
		payload[0], payload[1], payload[2], payload[3] = byte(src.Port()>>8), byte(src.Port()), byte(dst.Port()>>8), byte(dst.Port())
	}
	return serialize(t, ethLayer(clientMAC, routerMAC, true), ip, gopacket.Payload(payload))
}

// TestSteer runs the steering program: every frame leaves unchanged for
// a worker's cpumap entry; a flow always for the same worker, flows for
// every worker, and an IPv4 datagram's fragments for one worker.
func TestSteer(t *testing.T) {
	e := newEnv(t, Options{Workers: loadbalancer.Workers{CPUs: []int{0}}})
	steer := e.dp.objs.XlbSteer
	run := func(frame []byte) Verdict {
		t.Helper()
		ret, out, err := e.env.RunSplit(steer, frame, nil, 0)
		if err != nil {
			t.Fatalf("BPF_PROG_RUN: %v", err)
		}
		if !bytes.Equal(out, frame) {
			t.Fatalf("the steering program changed the frame:\n got %x\nwant %x", out, frame)
		}
		return Verdict(ret)
	}
	vip := netip.AddrPortFrom(vip4, 80)
	frames := map[string][]byte{
		"IPv4 TCP": steerFrame(t, netip.AddrPortFrom(client4, 1000), vip, loadbalancer.TCP, 0, false),
		"IPv4 UDP": steerFrame(t, netip.AddrPortFrom(client4, 1000), vip, loadbalancer.UDP, 0, false),
		"IPv6 TCP": steerFrame(t, netip.AddrPortFrom(client6, 1000), netip.AddrPortFrom(vip6, 80), loadbalancer.TCP, 0, false),
		"ARP": serialize(t, &layers.Ethernet{SrcMAC: clientMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
			&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
				Operation: layers.ARPRequest, SourceHwAddress: clientMAC, SourceProtAddress: client4.AsSlice(),
				DstHwAddress: net.HardwareAddr{0, 0, 0, 0, 0, 0}, DstProtAddress: vip4.AsSlice()}),
	}
	for name, frame := range frames {
		if v := run(frame); v != XDPRedirect {
			t.Errorf("%s: verdict %v, want %v to the one worker", name, v, XDPRedirect)
		}
	}

	// Two workers, the second with no cpumap entry: its flows are left
	// to the kernel (XDP_PASS), which tells the two apart.
	set := xlbSteerSet{Count: 2}
	set.Cpu[0], set.Cpu[1] = 0, uint32(loadbalancer.MaxWorkers-1)
	if err := e.dp.objs.SteerWorkers.Put(uint32(0), set); err != nil {
		t.Fatal(err)
	}
	seen := map[Verdict]int{}
	for i := range 64 {
		client := netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)})
		whole := steerFrame(t, netip.AddrPortFrom(client, uint16(2000+i)), vip, loadbalancer.UDP, 0, false)
		v := run(whole)
		if again := run(whole); again != v {
			t.Fatalf("flow %d: verdict %v, then %v", i, v, again)
		}
		seen[v]++
		first := run(steerFrame(t, netip.AddrPortFrom(client, uint16(2000+i)), vip, loadbalancer.UDP, 0, true))
		if later := run(steerFrame(t, netip.AddrPortFrom(client, uint16(2000+i)), vip, loadbalancer.UDP, 2, false)); later != first {
			t.Fatalf("datagram %d: first fragment %v, the next %v", i, first, later)
		}
	}
	if seen[XDPRedirect] == 0 || seen[XDPPass] == 0 || len(seen) != 2 {
		t.Fatalf("64 flows over two workers: %v, want both", seen)
	}
}
