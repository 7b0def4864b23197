// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// Packet tests of the SYN proxy (bpf/lib/synproxy.h). The cookie is the
// kernel's: the tests take it from the SYN-ACK and build every other
// expected frame from it with gopacket.

// synProxyService adds the TCP service VIP:80 over real 1 (port 8080)
// with the SYN proxy on.
func (e *testEnv) synProxyService(f family) (real1, local netip.AddrPort) {
	e.t.Helper()
	if err := checkSynProxy(); err != nil {
		testenv.Unavailable(e.t, "%v", err)
	}
	real1 = netip.AddrPortFrom(f.real(1), 8080)
	k := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	if err := e.dp.AddService(loadbalancer.Service{Key: k, Scheduler: loadbalancer.RoundRobin,
		LocalIPs: []netip.Addr{f.laddr}, SynProxy: true}); err != nil {
		e.t.Fatalf("add service: %v", err)
	}
	if err := e.dp.SetReals(k, []loadbalancer.Real{{Addr: real1.Addr(), Port: 8080, Weight: 1}}); err != nil {
		e.t.Fatalf("set reals: %v", err)
	}
	return real1, netip.AddrPortFrom(f.laddr, 1025)
}

func sackPermitted() layers.TCPOption {
	return layers.TCPOption{OptionType: layers.TCPOptionKindSACKPermitted, OptionLength: 2}
}

func windowScale(s uint8) layers.TCPOption {
	return layers.TCPOption{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{s}}
}

func tsOption(val, ecr uint32) layers.TCPOption {
	return timestamps(val, ecr)[2]
}

// synOptions is what the proxy writes in a SYN or SYN-ACK: MSS, SACK
// permitted and timestamps, NOP and window scale.
func synOptions(mss uint16, val, ecr uint32, ws uint8) []layers.TCPOption {
	return []layers.TCPOption{mssOption(mss), sackPermitted(), tsOption(val, ecr), nop, windowScale(ws)}
}

// TestSynProxy follows one connection through the SYN proxy: the SYN is
// answered with a cookie and leaves no entry; an ACK without a valid
// cookie is dropped; the valid one becomes the SYN to the real with the
// options the cookie kept (MSS, window scale, SACK, timestamps) and its
// data is kept; later data before the real answers is dropped; the
// real's SYN-ACK is answered with the ACK and the kept data; from then
// on sequence numbers, timestamps and windows are shifted between the
// two handshakes, SACK edges included.
func TestSynProxy(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			real1, local := e.synProxyService(f)
			mss, idx := uint16(1460), uint32(3)
			if f.v6 {
				mss, idx = 1440, 2
			}
			const clientTS = 0x12345678

			// SYN -> SYN-ACK with a cookie, back to the client
			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			syn.seq, syn.payload = 1000, nil
			syn.options = []layers.TCPOption{mssOption(1460), sackPermitted(), tsOption(clientTS, 0), nop, windowScale(7)}
			_, out := e.run(syn.frame(t))
			got := decode(out).Layer(layers.LayerTypeTCP)
			if got == nil {
				t.Fatalf("no TCP answer to the SYN:\n%s", decode(out).Dump())
			}
			cookie := got.(*layers.TCP).Seq
			ours := uint32(clientTS&^0xff | 7 | 0x10 | idx<<5)
			synAck := syn.reply("SA")
			synAck.ttl, synAck.seq, synAck.ack, synAck.window = 65, cookie, 1001, mss
			synAck.options = synOptions(mss, ours, clientTS, 7)
			want := synAck.translated(synAck.src, synAck.dst, synAck.srcMAC, synAck.dstMAC)
			e.expect(syn.frame(t), XDPTx, want.frame(t))
			if n := e.ctCount(f); n.Entries != 0 {
				t.Errorf("%d connection entries after a SYN, want none", n.Entries)
			}

			// an ACK without a valid cookie: dropped
			bad := syn
			// (a cookie one off can still be valid: its low bits are an MSS index)
			bad.flags, bad.seq, bad.ack, bad.options = "A", 1001, cookie+1+100, timestamps(clientTS+1, ours)
			e.expectDrop(bad.frame(t), DropSyncookieInvalid)

			// the cookie's ACK with a request -> the SYN to the real
			ack := bad
			ack.ack, ack.flags, ack.payload = cookie+1, "PA", []byte("GET / HTTP/1.0\r\n\r\n")
			toReal := syn.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))
			toReal.seq, toReal.window = 1000, 0xffff
			toReal.options = synOptions(mss, clientTS+1, 0, 7)
			e.expect(ack.frame(t), XDPRedirect, toReal.frame(t))

			// more data before the real answered: dropped, counted
			more := ack
			more.seq, more.payload = 1001+uint32(len(ack.payload)), []byte("more")
			e.expectDrop(more.frame(t), DropSynproxyEarly)

			// the real's SYN-ACK -> the ACK with the kept request, to the real
			const realISN, realTS = 90000, 5000
			realSynAck := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "SA",
				src: real1, dst: local, seq: realISN, ack: 1001,
				options: []layers.TCPOption{mssOption(1460), sackPermitted(), tsOption(realTS, clientTS+1), nop, windowScale(9)}}
			ackToReal := realSynAck.reply("PA")
			ackToReal.ttl, ackToReal.seq, ackToReal.ack, ackToReal.window = 65, 1001, realISN+1, 0xffff>>7
			ackToReal.options, ackToReal.payload = timestamps(clientTS+1, realTS), ack.payload
			want = ackToReal.translated(ackToReal.src, ackToReal.dst, ackToReal.srcMAC, ackToReal.dstMAC)
			e.expect(realSynAck.frame(t), XDPTx, want.frame(t))

			// the real's answer, shifted into the cookie's sequence space,
			// its timestamp into ours, its window to our scale (9 -> 7)
			delta, tsDelta := uint32(realISN)-cookie, ours-realTS
			answer := realSynAck
			answer.flags, answer.seq, answer.ack, answer.window = "PA", realISN+1, 1001+uint32(len(ack.payload)), 1000
			answer.options, answer.payload = timestamps(realTS+1, clientTS+1), []byte("HTTP/1.0 200 OK\r\n\r\n")
			toClient := answer.translated(syn.dst, syn.src, e.clientIf.HardwareAddr, clientMAC)
			toClient.seq, toClient.window = answer.seq-delta, 4000
			toClient.options = timestamps(realTS+1+tsDelta, clientTS+1)
			e.expect(answer.frame(t), XDPRedirect, toClient.frame(t))

			// the client's acknowledgement and SACK, shifted back
			cack := more
			cack.flags, cack.payload = "A", nil
			cack.ack = cookie + 1 + uint32(len(answer.payload))
			cack.options = joinOptions(timestamps(clientTS+2, realTS+1+tsDelta), sack(cookie+100, cookie+200))
			fwd := cack.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))
			fwd.ack = cack.ack + delta
			fwd.options = joinOptions(timestamps(clientTS+2, realTS+1), sack(cookie+100+delta, cookie+200+delta))
			e.expect(cack.frame(t), XDPRedirect, fwd.frame(t))

			ev := e.events()
			// the SYN ran twice: once to read the cookie
			for name, n := range map[string]uint64{"syncookie_sent": 2, "syncookie_valid": 1,
				"synproxy_opened": 1, "synproxy_early_kept": 1} {
				if ev[name] != n {
					t.Errorf("event %s: %d, want %d", name, ev[name], n)
				}
			}
		})
	}
}

// TestSynProxyWithoutTimestamps: a client without timestamps gets a
// SYN-ACK with the cookie's MSS alone, and the real a SYN with the
// default MSS and no window scale or SACK (what a cookie cannot keep).
func TestSynProxyWithoutTimestamps(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	real1, local := e.synProxyService(f)
	syn := e.clientPkt(f, loadbalancer.TCP, 40001, 80, "S")
	syn.seq, syn.payload = 7000, nil
	syn.options = []layers.TCPOption{mssOption(1400), sackPermitted(), nop, windowScale(7)}
	_, out := e.run(syn.frame(t))
	got := decode(out).Layer(layers.LayerTypeTCP)
	if got == nil {
		t.Fatalf("no TCP answer to the SYN:\n%s", decode(out).Dump())
	}
	cookie := got.(*layers.TCP).Seq
	synAck := syn.reply("SA")
	synAck.ttl, synAck.seq, synAck.ack, synAck.window = 65, cookie, 7001, 1300
	synAck.options = []layers.TCPOption{mssOption(1300)}
	// 58 bytes: gopacket pads a frame to Ethernet's 60, the proxy does not
	want := synAck.translated(synAck.src, synAck.dst, synAck.srcMAC, synAck.dstMAC).frame(t)
	e.expect(syn.frame(t), XDPTx, want[:14+20+24])

	ack := syn
	ack.flags, ack.seq, ack.ack, ack.options = "A", 7001, cookie+1, nil
	toReal := syn.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))
	toReal.seq, toReal.window, toReal.options = 7000, 0xffff, []layers.TCPOption{mssOption(1460)}
	e.expect(ack.frame(t), XDPRedirect, toReal.frame(t)[:14+20+24])
}

// TestSynProxyRefusedForUDP: the model refuses the SYN proxy on UDP.
func TestSynProxyRefusedForUDP(t *testing.T) {
	s := loadbalancer.Service{Key: loadbalancer.ServiceKey{VIP: vip4, Port: 53, Proto: loadbalancer.UDP}, SynProxy: true}
	if err := s.Validate(); err == nil {
		t.Fatal("a UDP service with the SYN proxy was accepted")
	}
}

// TestSynProxyNeedsTheKernel: on a kernel without the raw SYN cookie
// helpers, a service with the SYN proxy is refused with the reason, and
// nothing is added.
func TestSynProxyNeedsTheKernel(t *testing.T) {
	e := newEnv(t, Options{})
	have := haveSyncookies
	haveSyncookies = func() bool { return false }
	defer func() { haveSyncookies = have }()
	k := loadbalancer.ServiceKey{VIP: vip4, Port: 80, Proto: loadbalancer.TCP}
	err := e.dp.AddService(loadbalancer.Service{Key: k, LocalIPs: []netip.Addr{laddr4}, SynProxy: true})
	if !errors.Is(err, ErrKernelFeature) || !strings.Contains(err.Error(), "Linux 6.0") {
		t.Fatalf("add service: %v, want the missing kernel feature named", err)
	}
	if st, _ := e.dp.Status(); len(st) != 0 {
		t.Errorf("%d services after the refusal, want none", len(st))
	}
}

// cookieConn sends a SYN from client port cport (no options, as
// TestSynProxyWithoutTimestamps) and returns its cookie, then its cookie
// ACK, which becomes the SYN to the real: the connection waits for the
// real's answer.
func (e *testEnv) cookieConn(f family, cport uint16) (cookie uint32) {
	t := e.t
	t.Helper()
	syn := e.clientPkt(f, loadbalancer.TCP, cport, 80, "S")
	syn.seq, syn.payload = 5000, nil
	v, out := e.run(syn.frame(t))
	tcp, _ := decode(out).Layer(layers.LayerTypeTCP).(*layers.TCP)
	if v != XDPTx || tcp == nil || !tcp.SYN || !tcp.ACK {
		t.Fatalf("SYN: verdict %s, want a SYN-ACK:\n%s", v, decode(out).Dump())
	}
	cookie = tcp.Seq
	ack := syn
	ack.flags, ack.seq, ack.ack = "A", 5001, cookie+1
	if v, out = e.run(ack.frame(t)); v != XDPRedirect || !decode(out).Layer(layers.LayerTypeTCP).(*layers.TCP).SYN {
		t.Fatalf("cookie ACK: verdict %s, want the SYN to the real", v)
	}
	return cookie
}

// proxiedConn opens a connection through the SYN proxy from client port
// cport (cookieConn) and has the real answer; it returns the cookie.
func (e *testEnv) proxiedConn(f family, real1, local netip.AddrPort, cport uint16, realISN uint32) (cookie uint32) {
	t := e.t
	t.Helper()
	cookie = e.cookieConn(f, cport)
	synAck := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "SA",
		src: real1, dst: local, seq: realISN, ack: 5001}
	if v, _ := e.run(synAck.frame(t)); v != XDPTx {
		t.Fatalf("the real's SYN-ACK: verdict %s, want the ACK back to the real", v)
	}
	return cookie
}

// TestSynProxyReopen: a closing SYN-proxied connection's last ACK is
// forwarded as the old connection's, even when its acknowledgement
// number would pass the cookie check; a new SYN on the same port is
// answered with a cookie, and only its cookie ACK opens a new connection
// (a second SYN to the real).
func TestSynProxyReopen(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	real1, local := e.synProxyService(f)
	cookie := e.proxiedConn(f, real1, local, 41000, 70000)

	// the client closes; the real answers with its FIN
	fin := e.clientPkt(f, loadbalancer.TCP, 41000, 80, "FA")
	fin.seq, fin.ack, fin.payload = 5001, cookie+1, nil
	e.expect(fin.frame(t), XDPRedirect, nil)
	rfin := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "FA",
		src: real1, dst: local, seq: 70001, ack: 5002}
	e.expect(rfin.frame(t), XDPRedirect, nil)

	// the last ACK: the old connection's, to the real, with the
	// acknowledgement shifted (cookie + 2 may pass a cookie check)
	last := fin
	last.flags, last.seq, last.ack = "A", 5002, cookie+2
	want := last.translated(local, real1, e.realIf.HardwareAddr, realMAC(1))
	want.ack = 70002
	e.expect(last.frame(t), XDPRedirect, want.frame(t))

	// the port again: a cookie, then a new connection
	before := e.events()["syncookie_valid"]
	e.proxiedConn(f, real1, netip.AddrPortFrom(f.laddr, local.Port()+1), 41000, 80000)
	if n := e.events()["syncookie_valid"] - before; n != 1 {
		t.Errorf("%d cookies taken for the reopened port, want 1", n)
	}
}

// TestSynProxyRealRefuses: a real that answers the proxy's SYN with a
// RST (no listener) resets the client's connection, in the cookie's
// sequence space the client knows.
func TestSynProxyRealRefuses(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	real1, local := e.synProxyService(f)
	cookie := e.cookieConn(f, 42000)
	syn := e.clientPkt(f, loadbalancer.TCP, 42000, 80, "S")

	rst := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: loadbalancer.TCP, flags: "RA",
		src: real1, dst: local, seq: 0, ack: 5001}
	want := rst.translated(syn.dst, syn.src, e.clientIf.HardwareAddr, clientMAC)
	want.seq = cookie + 1
	e.expect(rst.frame(t), XDPRedirect, want.frame(t))
}
