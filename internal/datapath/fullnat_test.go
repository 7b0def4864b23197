// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// family picks the test addresses of one address family.
type family struct {
	name               string
	vip, client, laddr netip.Addr
	v6                 bool
}

var families = []family{
	{name: "ipv4", vip: vip4, client: client4, laddr: laddr4},
	{name: "ipv6", vip: vip6, client: client6, laddr: laddr6, v6: true},
}

func (f family) real(n int) netip.Addr { return realAddr(f.v6, n) }

// addService adds a service with one local IP and the given reals.
func (e *testEnv) addService(k loadbalancer.ServiceKey, s loadbalancer.Scheduler, laddr netip.Addr, reals ...loadbalancer.Real) {
	e.t.Helper()
	if err := e.dp.AddService(loadbalancer.Service{Key: k, Scheduler: s, LocalIPs: []netip.Addr{laddr}}); err != nil {
		e.t.Fatalf("add service: %v", err)
	}
	if err := e.dp.SetReals(k, reals); err != nil {
		e.t.Fatalf("set reals: %v", err)
	}
}

// expect runs a frame and checks the verdict and, when want is not nil,
// the output bytes.
func (e *testEnv) expect(in []byte, wantVerdict Verdict, want []byte) []byte {
	e.t.Helper()
	v, out := e.run(in)
	if v != wantVerdict {
		e.t.Fatalf("verdict %s, want %s\nin:\n%s", v, wantVerdict, decode(in).Dump())
	}
	if want != nil && !bytes.Equal(out, want) {
		e.t.Fatalf("output differs\ngot:\n%s\nwant:\n%s", decode(out).Dump(), decode(want).Dump())
	}
	return out
}

// clientPkt is a client's packet to the VIP.
func (e *testEnv) clientPkt(f family, proto loadbalancer.Proto, cport, vport uint16, flags string) pkt {
	return pkt{srcMAC: clientMAC, dstMAC: e.clientIf.HardwareAddr, proto: proto, flags: flags,
		src: netip.AddrPortFrom(f.client, cport), dst: netip.AddrPortFrom(f.vip, vport), payload: []byte("hello xlb")}
}

// oneRealService adds the service VIP:80 of a family over real 1, port
// 8080, and returns the real and the local IP and port the service's
// first connection gets (the first port of the range: one CPU).
func (e *testEnv) oneRealService(f family, proto loadbalancer.Proto) (real1, local netip.AddrPort) {
	real1 = netip.AddrPortFrom(f.real(1), 8080)
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: proto}, loadbalancer.RoundRobin, f.laddr,
		loadbalancer.Real{Addr: real1.Addr(), Port: real1.Port(), Weight: 1})
	return real1, netip.AddrPortFrom(f.laddr, 1025)
}

func TestFullNATBothDirections(t *testing.T) {
	for _, f := range families {
		for _, proto := range []loadbalancer.Proto{loadbalancer.TCP, loadbalancer.UDP} {
			t.Run(f.name+"/"+proto.String(), func(t *testing.T) {
				e := newEnv(t, Options{})
				real1, local := e.oneRealService(f, proto)

				first := e.clientPkt(f, proto, 40000, 80, "S")
				e.expect(first.frame(t), XDPRedirect,
					first.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))

				reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: proto, flags: "SA",
					src: real1, dst: local, payload: []byte("hi from real")}
				e.expect(reply.frame(t), XDPRedirect,
					reply.translated(first.dst, first.src, e.clientIf.HardwareAddr, clientMAC).frame(t))

				next := first
				next.flags, next.seq = "A", 1
				e.expect(next.frame(t), XDPRedirect,
					next.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))

				st, err := e.dp.Status()
				if err != nil {
					t.Fatal(err)
				}
				got := st[0].Stats
				if got.Conns != 1 || got.InPackets != 2 || got.OutPackets != 1 {
					t.Errorf("service counters %+v, want 1 conn, 2 in, 1 out", got)
				}
				if rs := st[0].Reals[0].Stats; rs != got {
					t.Errorf("real counters %+v, want the service's %+v", rs, got)
				}
			})
		}
	}
}

func TestUDPWithoutChecksumStaysWithout(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 53, Proto: loadbalancer.UDP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, loadbalancer.Real{Addr: f.real(1), Port: 5353, Weight: 1})
	in := e.clientPkt(f, loadbalancer.UDP, 40000, 53, "")
	in.noUDPChecksum = true
	want := in.translated(netip.AddrPortFrom(f.laddr, 1025), netip.AddrPortFrom(f.real(1), 5353), e.realIf.HardwareAddr, realMAC(1))
	e.expect(in.frame(t), XDPRedirect, want.frame(t))
}

func TestPortZeroServiceKeepsPort(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.addService(loadbalancer.ServiceKey{VIP: f.vip, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr, loadbalancer.Real{Addr: f.real(2), Weight: 1})
			for _, port := range []uint16{22, 443, 8443} {
				in := e.clientPkt(f, loadbalancer.TCP, 40000+port, port, "S")
				out := e.expect(in.frame(t), XDPRedirect, nil)
				if got, want := dstOf(t, out), netip.AddrPortFrom(f.real(2), port); got != want {
					t.Errorf("port %d went to %s, want %s", port, got, want)
				}
			}
		})
	}
}

func TestNotOursPassesUnchanged(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	e.addService(loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, f.laddr, loadbalancer.Real{Addr: f.real(1), Port: 80, Weight: 1})
	e.addService(loadbalancer.ServiceKey{VIP: vip6, Port: 80, Proto: loadbalancer.TCP}, loadbalancer.RoundRobin, laddr6, loadbalancer.Real{Addr: realAddr(true, 1), Port: 80, Weight: 1})

	other := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
	other.dst = netip.MustParseAddrPort("10.0.3.3:80")
	otherPort := e.clientPkt(f, loadbalancer.TCP, 40000, 81, "S")
	otherProto := e.clientPkt(f, loadbalancer.UDP, 40000, 80, "")
	other6 := e.clientPkt(families[1], loadbalancer.TCP, 40000, 8080, "S")
	arp := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, clientMAC...)
	arp = append(arp, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1)
	arp = append(arp, clientMAC...)
	arp = append(arp, 10, 0, 1, 10, 0, 0, 0, 0, 0, 0, 10, 0, 1, 1)

	for _, tc := range []struct {
		name string
		have []byte
	}{
		{"other destination", other.frame(t)},
		{"other port of the VIP", otherPort.frame(t)},
		{"other protocol of the VIP", otherProto.frame(t)},
		{"other port of the IPv6 VIP", other6.frame(t)},
		{"ARP", arp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.with(t).expect(tc.have, XDPPass, tc.have)
		})
	}
}

func TestLocalIPsTakenInTurn(t *testing.T) {
	e := newEnv(t, Options{})
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	second := netip.MustParseAddr("10.0.2.253")
	if err := e.dp.AddLocalIP(key, second); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.AddLocalIP(key, second); !errors.Is(err, loadbalancer.ErrExists) {
		t.Errorf("adding it twice: %v, want ErrExists", err)
	}
	var got []netip.Addr
	for i := 0; i < 4; i++ {
		got = append(got, srcOf(t, e.expect(e.clientPkt(f, loadbalancer.TCP, uint16(30000+i), 80, "S").frame(t), XDPRedirect, nil)).Addr())
	}
	if want := []netip.Addr{f.laddr, second, f.laddr, second}; !slices.Equal(got, want) {
		t.Errorf("local IPs %v, want %v", got, want)
	}
	if err := e.dp.RemoveLocalIP(key, f.laddr); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p := e.clientPkt(f, loadbalancer.TCP, uint16(31000+i), 80, "S")
		if got := srcOf(t, e.expect(p.frame(t), XDPRedirect, nil)).Addr(); got != second {
			t.Errorf("after removing %s, connection %d used %s", f.laddr, i, got)
		}
	}
	// the connection that used the removed local IP goes on, both ways
	held := e.clientPkt(f, loadbalancer.TCP, 30000, 80, "A")
	out := e.expect(held.frame(t), XDPRedirect, nil)
	if got := srcOf(t, out).Addr(); got != f.laddr {
		t.Errorf("held connection moved to %s", got)
	}
	reply := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "A", src: dstOf(t, out), dst: srcOf(t, out)}
	if got := dstOf(t, e.expect(reply.frame(t), XDPRedirect, nil)); got != held.src {
		t.Errorf("reply of the held connection went to %s, want %s", got, held.src)
	}
	// without a local IP (as DPVS before --add-laddr), new connections
	// are dropped and counted as no_laddr
	if err := e.dp.RemoveLocalIP(key, second); err != nil {
		t.Fatalf("remove the last local IP: %v", err)
	}
	e.expect(e.clientPkt(f, loadbalancer.TCP, 45000, 80, "S").frame(t), XDPDrop, nil)
	if drops, err := e.dp.Drops(); err != nil || drops[DropNoLocalIP] != 1 {
		t.Errorf("no_laddr drops %d (%v), want 1", drops[DropNoLocalIP], err)
	}
}

// TestHeaderVariants forwards frames whose headers the parser must step
// over: IPv4 options, an 802.1Q tag (kept), an IPv6 hop-by-hop header.
func TestHeaderVariants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      family
		change func(*pkt)
		frame  func([]byte) []byte // applied to input and expected output
	}{
		{"ipv4 options", families[0], func(p *pkt) { p.ipOptions = true }, nil},
		{"vlan tag", families[0], func(p *pkt) { p.vlan = 42 }, nil},
		{"ipv6 vlan tag", families[1], func(p *pkt) { p.vlan = 42 }, nil},
		{"ipv6 hop-by-hop header", families[1], nil, func(b []byte) []byte { return ipv6Ext(b, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.oneRealService(tc.f, loadbalancer.TCP)
			in := e.clientPkt(tc.f, loadbalancer.TCP, 40000, 80, "S")
			if tc.change != nil {
				tc.change(&in)
			}
			have, want := in.frame(t), in.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t)
			if tc.frame != nil {
				have, want = tc.frame(have), tc.frame(want)
			}
			e.expect(have, XDPRedirect, want)
		})
	}
}
