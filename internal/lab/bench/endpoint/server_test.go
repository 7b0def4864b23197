// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/testenv"
)

const (
	xdpAborted = 0
	xdpDrop    = 1
	xdpPass    = 2
	xdpTX      = 3
)

func needRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "BPF")
}

// run runs prog once on in and returns its action and output frame.
func run(t *testing.T, prog *ebpf.Program, in []byte) (uint32, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+2048)}
	ret, err := prog.Run(opts)
	if err != nil {
		t.Fatalf("BPF_PROG_RUN: %v", err)
	}
	return ret, opts.DataOut
}

// testCookie mirrors cookie() of ep_server.bpf.c for the server-to-
// client tuple.
func testCookie(from, to netip.AddrPort, secret uint32) uint32 {
	s, d := from.Addr().As4(), to.Addr().As4()
	h := binary.BigEndian.Uint32(s[:])*0x9e3779b1 ^ binary.BigEndian.Uint32(d[:])
	h ^= (uint32(from.Port())<<16 | uint32(to.Port())) * 0x85ebca6b
	h ^= secret
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	return h
}

func TestServerAnswers(t *testing.T) {
	needRoot(t)
	const secret, response = 0x1234abcd, 300
	client := netip.AddrPortFrom(clientIP, 40000)
	server := netip.AddrPortFrom(vip, 80)
	in := seg{srcMAC: clientMAC, dstMAC: lbMAC, src: client, dst: server}
	with := func(flags byte, seq, ack uint32, payload int) seg {
		s := in
		s.flags, s.seq, s.ack, s.payload = flags, seq, ack, payload
		return s
	}
	syn := with(fSYN, 1000, 0, 0)
	cookie := testCookie(server, client, secret)
	otherPort := in
	otherPort.dst = netip.AddrPortFrom(vip, 443)
	truncated := with(fACK|fPSH, 1001, cookie+1, 50).bytes()[:80]
	arp := append(bytes.Repeat([]byte{0xff}, 6), 2, 0, 0, 0, 0, 1, 0x08, 0x06)
	arp = append(arp, make([]byte, 28)...)
	for _, tc := range []struct {
		name   string
		in     []byte
		action uint32
		out    []byte // nil: the input, unchanged
		count  func(ServerStats) uint64
	}{
		{"SYN gets a SYN-ACK with the cookie", syn.bytes(), xdpTX,
			syn.reply(fSYN|fACK, cookie, 1001, 0).bytes(), func(s ServerStats) uint64 { return s.SYNs }},
		{"request gets the response", with(fACK|fPSH, 1001, cookie+1, 40).bytes(), xdpTX,
			syn.reply(fACK|fPSH, cookie+1, 1041, response).bytes(), func(s ServerStats) uint64 { return s.Requests }},
		{"FIN gets FIN-ACK", with(fFIN|fACK, 1041, cookie+1+response, 0).bytes(), xdpTX,
			syn.reply(fFIN|fACK, cookie+1+response, 1042, 0).bytes(), func(s ServerStats) uint64 { return s.FINs }},
		{"ACK without data is dropped", with(fACK, 1001, cookie+1, 0).bytes(), xdpDrop, nil,
			func(s ServerStats) uint64 { return s.ACKs }},
		{"RST is dropped", with(fRST, 1001, 0, 0).bytes(), xdpDrop, nil, func(s ServerStats) uint64 { return s.RSTs }},
		{"other ports go to the kernel", otherPort.bytes(), xdpPass, nil, nil},
		{"a truncated segment goes to the kernel", truncated, xdpPass, nil, nil},
		{"ARP goes to the kernel", arp, xdpPass, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(ServerConfig{PortLo: 80, PortHi: 89, ResponseSize: response})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			setSecret(t, s, secret)
			action, out := run(t, s.objs.XdpEpServer, tc.in)
			if action != tc.action {
				t.Fatalf("action %d, want %d", action, tc.action)
			}
			want := tc.out
			if want == nil {
				want = tc.in
			}
			if !bytes.Equal(out, want) {
				t.Errorf("output\n got %x\nwant %x", out, want)
			}
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if tc.count != nil && tc.count(st) != 1 {
				t.Errorf("counters %+v: the case's counter is not 1", st)
			}
		})
	}
}

func setSecret(t *testing.T, s *Server, secret uint32) {
	t.Helper()
	var c epServerEpServerCfg
	if err := s.objs.EpServerConfig.Get(&c); err != nil {
		t.Fatal(err)
	}
	c.CookieSecret = secret
	if err := s.objs.EpServerConfig.Set(c); err != nil {
		t.Fatal(err)
	}
}

func TestServerUDP(t *testing.T) {
	needRoot(t)
	s, err := NewServer(ServerConfig{PortLo: 53, PortHi: 53, ResponseSize: 100, UDP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := seg{srcMAC: clientMAC, dstMAC: lbMAC, src: netip.AddrPortFrom(clientIP, 5000), dst: netip.AddrPortFrom(vip, 53), udp: true, payload: 18}
	action, out := run(t, s.objs.XdpEpServer, in.bytes())
	if want := in.reply(0, 0, 0, 100).bytes(); action != xdpTX || !bytes.Equal(out, want) {
		t.Fatalf("action %d, output\n got %x\nwant %x", action, out, want)
	}
	tcp := in
	tcp.udp = false
	if action, _ := run(t, s.objs.XdpEpServer, tcp.bytes()); action != xdpPass {
		t.Errorf("TCP to a UDP server: action %d, want pass", action)
	}
	if st, _ := s.Stats(); st.Datagrams != 1 {
		t.Errorf("datagrams %d, want 1", st.Datagrams)
	}
}

func TestServerConfigErrors(t *testing.T) {
	for _, c := range []ServerConfig{
		{PortLo: 0, PortHi: 80, ResponseSize: 1},
		{PortLo: 90, PortHi: 80, ResponseSize: 1},
		{PortLo: 80, PortHi: 80, ResponseSize: MaxPayload + 1},
		{PortLo: 80, PortHi: 80, ResponseSize: 0},
	} {
		if err := c.check(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
