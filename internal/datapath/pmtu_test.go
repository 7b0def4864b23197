// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Quote lengths of the ICMP errors the data path builds (XLB_ICMP4_QUOTE,
// XLB_ICMP6_QUOTE in bpf/lib/consts.h).
const (
	icmp4Quote = 128
	icmp6Quote = 256
)

// tooBig is the ICMP error a router sends about frame in (which went from
// its source to its destination): fragmentation needed or packet too big
// with mtu, from in's destination back to its source, quoting the start
// of in's IP packet. Built here with gopacket, checksums from scratch.
func tooBig(t *testing.T, in []byte, v6 bool, mtu int, srcMAC, dstMAC net.HardwareAddr) []byte {
	t.Helper()
	p := decode(in)
	eth := ethLayer(srcMAC, dstMAC, !v6)
	if !v6 {
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		out := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xc0, TTL: 64, Protocol: layers.IPProtocolICMPv4,
			SrcIP: ip.DstIP, DstIP: ip.SrcIP}
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 4), Seq: uint16(mtu)}
		return serialize(t, eth, out, icmp, gopacket.Payload(in[ethLen:ethLen+icmp4Quote]))
	}
	ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	out := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: ip.DstIP, DstIP: ip.SrcIP}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(2, 0)}
	_ = icmp.SetNetworkLayerForChecksum(out)
	body := binary.BigEndian.AppendUint32(nil, uint32(mtu))
	body = append(body, in[ethLen:ethLen+icmp6Quote]...)
	return serialize(t, eth, out, icmp, gopacket.Payload(body))
}

// routeMTU sets the MTU of the route to one side's subnet in the
// environment's namespace (the link keeps its MTU of 1500: a narrower
// path further on, as a router sees it).
func (e *testEnv) routeMTU(t *testing.T, v6 bool, prefix, dev string, mtu int) {
	t.Helper()
	// the kernel's own route to the subnet, replaced (same metric)
	args := []string{"-n", e.ns, "route", "replace", prefix, "dev", dev, "mtu", "lock", itoa(mtu)}
	if v6 {
		args = append([]string{"-6"}, append(args, "metric", "256")...)
	}
	ipCmd(t, args...)
}

func itoa(n int) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(n)).String()[len("0.0.0.0:"):]
}

// TestTooBigGetsICMP: a client's packet larger than the route MTU toward
// the reals gets fragmentation needed / packet too big from the VIP; a
// real's reply larger than the route MTU toward the client gets one from
// the local IP. An IPv4 packet without DF is dropped and counted.
func TestTooBigGetsICMP(t *testing.T) {
	const mtu = 1300
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.oneRealService(f, loadbalancer.TCP)
			realNet, clientNet := "10.0.2.0/24", "10.0.1.0/24"
			if f.v6 {
				realNet, clientNet = "fd00:2::/64", "fd00:1::/64"
			}
			e.routeMTU(t, f.v6, realNet, "xr", mtu)
			e.routeMTU(t, f.v6, clientNet, "xc", mtu)

			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			e.expect(syn.frame(t), XDPRedirect, nil)
			big := syn
			big.flags, big.payload = "A", make([]byte, 1400)
			in := big.frame(t)
			// the error goes back out of the interface the packet came
			// in on: a redirect there (XDP_TX only where xlb is not
			// attached, as on BPF_PROG_RUN's default device)
			e.ingress = e.clientIf
			e.expect(in, XDPRedirect, tooBig(t, in, f.v6, mtu, e.clientIf.HardwareAddr, clientMAC))
			e.ingress = nil
			e.expect(in, XDPTx, tooBig(t, in, f.v6, mtu, e.clientIf.HardwareAddr, clientMAC))
			if n, err := e.dp.ICMPTooBigSent(); err != nil || n != 2 {
				t.Errorf("ICMP errors sent: %d (%v), want 2", n, err)
			}

			// fits: forwarded
			fits := syn
			fits.flags, fits.payload = "A", make([]byte, mtu-100)
			e.expect(fits.frame(t), XDPRedirect, nil)

			reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A",
				src: real1, dst: local, payload: make([]byte, 1400)}
			rin := reply.frame(t)
			e.expect(rin, XDPTx, tooBig(t, rin, f.v6, mtu, e.realIf.HardwareAddr, realMAC(1)))

			if !f.v6 {
				noDF := big.frame(t)
				noDF[ethLen+6] = 0 // clear DF
				binary.BigEndian.PutUint16(noDF[ethLen+10:], 0)
				binary.BigEndian.PutUint16(noDF[ethLen+10:], ^fold(onesSum(0, noDF[ethLen:ethLen+ipv4Len])))
				before, _ := e.dp.Drops()
				e.expect(noDF, XDPDrop, nil)
				if after, _ := e.dp.Drops(); after[DropFragNeeded] != before[DropFragNeeded]+1 {
					t.Errorf("frag_needed drops %d -> %d, want one more", before[DropFragNeeded], after[DropFragNeeded])
				}
			}
		})
	}
}

// TestTooBigIsRateLimited: past XLB_ICMP_PER_SEC errors in one second on
// one CPU, a too-big packet is dropped and counted instead.
func TestTooBigIsRateLimited(t *testing.T) {
	const perSec = 1000 // XLB_ICMP_PER_SEC
	e := newEnv(t, Options{})
	f := families[0]
	e.oneRealService(f, loadbalancer.UDP)
	e.routeMTU(t, false, "10.0.2.0/24", "xr", 1300)
	in := e.clientPkt(f, loadbalancer.UDP, 40000, 80, "")
	in.payload = make([]byte, 1400)
	frame := in.frame(t)
	start := time.Now()
	sent := 0
	const runs = 3 * perSec
	for i := 0; i < runs; i++ {
		if v, _ := e.run(frame); v == XDPTx {
			sent++
		}
	}
	if n, err := e.dp.ICMPTooBigSent(); err != nil || n != uint64(sent) {
		t.Errorf("ICMP errors counted %d (%v), sent %d", n, err, sent)
	}
	seconds := int(time.Since(start)/time.Second) + 1 // windows the loop can touch, at most this + 1
	drops, err := e.dp.Drops()
	if err != nil {
		t.Fatal(err)
	}
	if sent > perSec*(seconds+1) {
		t.Errorf("%d errors sent in %d s, want at most %d a second", sent, seconds, perSec)
	}
	if sent == 0 || int(drops[DropTooBig]) != runs-sent {
		t.Errorf("sent %d, too_big drops %d, want the other %d of %d", sent, drops[DropTooBig], runs-sent, runs)
	}
}

// TestUnresolvedNextHopIsDroppedAndRequested: a real the kernel has no
// neighbour entry for: the packet is dropped (never passed to the kernel,
// which would drop it as a martian), counted as no_neigh, and the next hop
// reaches the daemon through WatchNeighRequests.
func TestUnresolvedNextHopIsDroppedAndRequested(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			unresolved := f.real(numNSReals + 1)
			e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr,
				loadbalancer.Real{Addr: unresolved, Port: 8080, Weight: 1})

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got := make(chan NeighRequest, 16)
			done := make(chan error, 1)
			go func() { done <- e.dp.WatchNeighRequests(ctx, func(r NeighRequest) { got <- r }) }()

			before, _ := e.dp.Drops()
			e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S").frame(t), XDPDrop, nil)
			if after, _ := e.dp.Drops(); after[DropNoNeigh] != before[DropNoNeigh]+1 {
				t.Errorf("no_neigh drops %d -> %d, want one more", before[DropNoNeigh], after[DropNoNeigh])
			}
			select {
			case r := <-got:
				if r.Addr != unresolved || r.Ifindex != e.realIf.Index {
					t.Errorf("request %+v, want %s on ifindex %d", r, unresolved, e.realIf.Index)
				}
			case <-ctx.Done():
				t.Fatal("no neighbour request within 5 s")
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("WatchNeighRequests: %v", err)
			}
		})
	}
}
