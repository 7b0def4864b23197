// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/testenv"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// fwdFrame is a client's TCP or UDP packet to real 1 through the
// forwarder, built with gopacket (checksums complete), with ttl and
// the given MACs.
func fwdFrame(t *testing.T, v6, tcp bool, payload []byte, ttl uint8, src, dst net.HardwareAddr) []byte {
	t.Helper()
	client, real1 := progns.Client4, progns.RealAddr(false, 1)
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}
	var ip gopacket.NetworkLayer
	var ipl gopacket.SerializableLayer
	proto := layers.IPProtocolUDP
	if tcp {
		proto = layers.IPProtocolTCP
	}
	if v6 {
		client, real1 = progns.Client6, progns.RealAddr(true, 1)
		eth.EthernetType = layers.EthernetTypeIPv6
		l := &layers.IPv6{Version: 6, HopLimit: ttl, NextHeader: proto, SrcIP: client.AsSlice(), DstIP: real1.AsSlice()}
		ip, ipl = l, l
	} else {
		l := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Flags: layers.IPv4DontFragment, Protocol: proto,
			SrcIP: client.AsSlice(), DstIP: real1.AsSlice()}
		ip, ipl = l, l
	}
	var l4 gopacket.SerializableLayer
	if tcp {
		l := &layers.TCP{SrcPort: 40000, DstPort: 80, ACK: true, Seq: 1, Ack: 1, Window: 512, DataOffset: 5}
		_ = l.SetNetworkLayerForChecksum(ip)
		l4 = l
	} else {
		l := &layers.UDP{SrcPort: 40000, DstPort: 80}
		_ = l.SetNetworkLayerForChecksum(ip)
		l4 = l
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ipl, l4, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// partial turns a frame of fwdFrame into what a sender with TX checksum
// offload hands over: the L4 checksum field holds the folded sum of the
// pseudo-header only.
func partial(b []byte, v6, tcp bool) []byte {
	out := bytes.Clone(b)
	l4, addrs := 14+20, out[14+12:14+20]
	if v6 {
		l4, addrs = 14+40, out[14+8:14+40]
	}
	var sum uint32
	for i := 0; i < len(addrs); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(addrs[i:]))
	}
	proto, field := uint32(17), 6
	if tcp {
		proto, field = 6, 16
	}
	sum += proto + uint32(len(out)-l4)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(out[l4+field:], uint16(sum))
	return out
}

// TestFwdForwardsPartialAndJumboFrames: the bare forwarder redirects a
// client's packet to real 1 with the TTL decremented and the next hop's
// MACs, completing a partial checksum, for a frame of one buffer and a
// 9000-byte one in several, IPv4 and IPv6, TCP and UDP.
func TestFwdForwardsPartialAndJumboFrames(t *testing.T) {
	testenv.RequireRoot(t, "loads XDP and builds a network namespace")
	if !xdpfrags.Supported() {
		testenv.Unavailable(t, "this kernel has no multi-buffer XDP (Linux 5.18)")
	}
	env, err := progns.New(fmt.Sprintf("xlbf-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, ifname := range []string{progns.ClientIf, progns.ClientIf + "p", progns.RealIf, progns.RealIf + "p"} {
		if err := env.IP("link", "set", "dev", ifname, "mtu", "9000"); err != nil {
			t.Fatal(err)
		}
	}
	var objs fwdObjects
	frags, err := xdpfrags.LoadAndAssign(loadFwd, &objs)
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	if !frags {
		t.Fatal("the kernel has multi-buffer XDP, the forwarder was loaded without")
	}
	env.Do(func() { err = objs.FwdPorts.Put(uint32(env.Real.Index), uint32(env.Real.Index)) })
	if err != nil {
		t.Fatal(err)
	}
	for _, v6 := range []bool{false, true} {
		for _, tcp := range []bool{true, false} {
			for _, size := range []int{100, 8900} {
				name := fmt.Sprintf("v6 %v tcp %v payload %d", v6, tcp, size)
				payload := make([]byte, size)
				for i := range payload {
					payload[i] = byte(i*7 + i/251)
				}
				in := partial(fwdFrame(t, v6, tcp, payload, 64, progns.ClientMAC, env.Client.HardwareAddr), v6, tcp)
				want := fwdFrame(t, v6, tcp, payload, 63, env.Real.HardwareAddr, progns.RealMAC(1))
				ret, out, err := env.RunSplit(objs.XdpFwd, in, env.Client, 1000)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if ret != 4 /* XDP_REDIRECT */ || !bytes.Equal(out, want) {
					t.Errorf("%s: verdict %d, want 4 (redirect)\ngot:\n%s\nwant:\n%s", name, ret,
						gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default).Dump(),
						gopacket.NewPacket(want, layers.LayerTypeEthernet, gopacket.Default).Dump())
				}
			}
		}
	}
}

// TestFixedFwdRewritesMACsOnly: the fixed-next-hop forwarder redirects a
// frame from a port with a next hop to its egress with both MACs
// rewritten and not one other byte changed (no TTL, no checksum, even a
// partial one); a frame from a port without one passes to the kernel
// untouched.
func TestFixedFwdRewritesMACsOnly(t *testing.T) {
	testenv.RequireRoot(t, "loads XDP and builds a network namespace")
	env, err := progns.New(fmt.Sprintf("xlbx-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var objs fwdObjects
	if _, err := xdpfrags.LoadAndAssign(loadFwd, &objs); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	hop := fwdFwdNextHop{Ifindex: uint32(env.Real.Index)}
	copy(hop.Dmac[:], progns.RealMAC(1))
	copy(hop.Smac[:], env.Real.HardwareAddr)
	env.Do(func() {
		if err = objs.FwdPorts.Put(uint32(env.Real.Index), uint32(env.Real.Index)); err == nil {
			err = objs.FwdNext.Put(uint32(env.Client.Index), hop)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("fixed next hop")
	for _, tc := range []struct {
		name    string
		in      []byte
		ingress *net.Interface
		verdict uint32
		want    []byte
	}{
		{"udp v4", fwdFrame(t, false, false, payload, 64, progns.ClientMAC, env.Client.HardwareAddr), env.Client, 4,
			fwdFrame(t, false, false, payload, 64, env.Real.HardwareAddr, progns.RealMAC(1))},
		{"tcp v6 partial checksum", partial(fwdFrame(t, true, true, payload, 1, progns.ClientMAC, env.Client.HardwareAddr), true, true), env.Client, 4,
			partial(fwdFrame(t, true, true, payload, 1, env.Real.HardwareAddr, progns.RealMAC(1)), true, true)},
		{"no next hop", fwdFrame(t, false, true, payload, 64, progns.RealMAC(1), env.Real.HardwareAddr), env.Real, 2, /* XDP_PASS */
			fwdFrame(t, false, true, payload, 64, progns.RealMAC(1), env.Real.HardwareAddr)},
	} {
		ret, out, err := env.Run(objs.XdpFwdFixed, tc.in, tc.ingress)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ret != tc.verdict || !bytes.Equal(out, tc.want) {
			t.Errorf("%s: verdict %d, want %d\ngot  %x\nwant %x", tc.name, ret, tc.verdict, out, tc.want)
		}
	}
}
