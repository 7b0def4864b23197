// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/xdpsend"
)

// Slot 3 of the test client: with 2 ports per address, its second
// address and second port.
const (
	testSlot    = 3
	testRequest = 64
)

var (
	testServer   = netip.AddrPortFrom(vip, 80)
	testSlotAddr = netip.AddrPortFrom(clientIP.Next(), 40001)
)

func newTestClient(t *testing.T, keepalive bool, interval time.Duration) *Client {
	t.Helper()
	needRoot(t)
	c, err := NewClient(ClientConfig{SrcMAC: net.HardwareAddr(clientMAC[:]), DstMAC: net.HardwareAddr(lbMAC[:]),
		Src: clientIP, SrcPort: 40000, Ports: 2, Slots: 8, Dst: testServer, RequestSize: testRequest,
		Keepalive: keepalive, KeepaliveInterval: interval, RTO: time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send runs the sender once, doing job at slot, and returns its action
// and frame.
func send(t *testing.T, c *Client, job Job, slot uint32) (uint32, []byte) {
	t.Helper()
	if err := c.configure(job); err != nil {
		t.Fatal(err)
	}
	senders := make([]epClientEpSender, xdpsend.PossibleCPUs())
	for i := range senders {
		senders[i].Pace.StopNs = math.MaxUint64
		senders[i].Lo, senders[i].Hi, senders[i].Next = 0, 8, slot
	}
	if err := c.objs.EpSenders.Put(uint32(0), senders); err != nil {
		t.Fatal(err)
	}
	return run(t, c.objs.XdpEpSend, c.frame)
}

func slotState(t *testing.T, c *Client) epClientEpConn {
	t.Helper()
	var conn epClientEpConn
	if err := c.objs.EpConns.Lookup(uint32(testSlot), &conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

func setSlot(t *testing.T, c *Client, conn epClientEpConn) {
	t.Helper()
	if err := c.objs.EpConns.Put(uint32(testSlot), conn); err != nil {
		t.Fatal(err)
	}
}

func stats(t *testing.T, c *Client) ClientStats {
	t.Helper()
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expect checks an action and an output frame.
func expect(t *testing.T, step string, action uint32, out []byte, wantAction uint32, want []byte) {
	t.Helper()
	if action != wantAction {
		t.Fatalf("%s: action %d, want %d", step, action, wantAction)
	}
	if want != nil && !bytes.Equal(out, want) {
		t.Fatalf("%s: output\n got %x\nwant %x", step, out, want)
	}
}

// fromServer is a segment of the server to the test slot.
func fromServer(flags byte, seq, ack uint32, payload int) seg {
	return seg{srcMAC: lbMAC, dstMAC: clientMAC, src: testServer, dst: testSlotAddr, flags: flags, seq: seq, ack: ack, payload: payload}
}

// open opens the test slot's connection and returns the client's ISN.
func open(t *testing.T, c *Client) uint32 {
	t.Helper()
	action, out := send(t, c, Open, testSlot)
	if len(out) < 54 {
		t.Fatalf("open: %d-byte frame", len(out))
	}
	isn := binary.BigEndian.Uint32(out[38:])
	syn := seg{srcMAC: clientMAC, dstMAC: lbMAC, src: testSlotAddr, dst: testServer, flags: fSYN, seq: isn}
	expect(t, "open", action, out, xdpTX, syn.bytes())
	if s := slotState(t, c); s.State != 1 || s.SndNxt != isn+1 {
		t.Fatalf("after open: slot %+v, want SYN_SENT with snd_nxt %d", s, isn+1)
	}
	return isn
}

func TestClientConnection(t *testing.T) {
	c := newTestClient(t, false, 0)
	isn := open(t, c)
	toServer := func(flags byte, seq, ack uint32, payload int) []byte {
		return fromServer(0, 0, 0, 0).reply(flags, seq, ack, payload).bytes()
	}
	// a response before the handshake fits no state
	action, _ := run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5001, isn+1, 10).bytes())
	expect(t, "early response", action, nil, xdpDrop, nil)
	action, out := run(t, c.objs.XdpEpClient, fromServer(fSYN|fACK, 5000, isn+1, 0).bytes())
	expect(t, "SYN-ACK", action, out, xdpTX, toServer(fACK|fPSH, isn+1, 5001, testRequest))
	action, out = run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5001, isn+1+testRequest, 300).bytes())
	expect(t, "response", action, out, xdpTX, toServer(fFIN|fACK, isn+1+testRequest, 5301, 0))
	action, out = run(t, c.objs.XdpEpClient, fromServer(fFIN|fACK, 5301, isn+2+testRequest, 0).bytes())
	expect(t, "FIN-ACK", action, out, xdpTX, toServer(fACK, isn+2+testRequest, 5302, 0))
	if s := slotState(t, c); s.State != 0 {
		t.Errorf("after the close: state %d, want free", s.State)
	}
	want := ClientStats{Attempted: 1, Established: 1, Closed: 1, Requests: 1, Responses: 1, Unexpected: 1, ResponseBytes: 300}
	if got := stats(t, c); got != want {
		t.Errorf("counters\n got %+v\nwant %+v", got, want)
	}
	for kind, name := range map[HistogramKind]string{Handshake: "handshake", Response: "response"} {
		if h, err := c.Histogram(kind); err != nil || h.Total() != 1 {
			t.Errorf("%s histogram: %d counts (%v), want 1", name, h.Total(), err)
		}
	}
}

func TestClientRefusesStrangers(t *testing.T) {
	c := newTestClient(t, false, 0)
	isn := open(t, c)
	other := fromServer(fSYN|fACK, 5000, isn+1, 0)
	other.src = netip.AddrPortFrom(vip, 81)
	beyond := fromServer(fSYN|fACK, 5000, isn+1, 0)
	beyond.dst = netip.AddrPortFrom(clientIP, 40002) // past the 2 ports
	for name, in := range map[string][]byte{"other server port": other.bytes(), "port outside the range": beyond.bytes()} {
		if action, out := run(t, c.objs.XdpEpClient, in); action != xdpPass || !bytes.Equal(out, in) {
			t.Errorf("%s: action %d, want pass unchanged", name, action)
		}
	}
	// a SYN-ACK acknowledging something else is unexpected
	action, _ := run(t, c.objs.XdpEpClient, fromServer(fSYN|fACK, 5000, isn+7, 0).bytes())
	expect(t, "wrong ack", action, nil, xdpDrop, nil)
	// RST frees the slot
	action, _ = run(t, c.objs.XdpEpClient, fromServer(fRST, 0, 0, 0).bytes())
	expect(t, "RST", action, nil, xdpDrop, nil)
	if s := slotState(t, c); s.State != 0 {
		t.Errorf("after RST: state %d, want free", s.State)
	}
	if s := stats(t, c); s.RSTs != 1 || s.Unexpected != 1 || s.Errors() != 2 {
		t.Errorf("counters %+v: want 1 RST, 1 unexpected", s)
	}
}

func TestClientBusyRetransmitTimeout(t *testing.T) {
	c := newTestClient(t, false, 0)
	isn := open(t, c)
	// opening again finds the slot in use
	action, _ := send(t, c, Open, testSlot)
	expect(t, "busy", action, nil, xdpDrop, nil)
	// the SYN is older than the RTO: Tick sends it again, twice
	for i := 1; i <= 2; i++ {
		s := slotState(t, c)
		s.SentNs = 0
		setSlot(t, c, s)
		action, out := send(t, c, Tick, testSlot)
		syn := seg{srcMAC: clientMAC, dstMAC: lbMAC, src: testSlotAddr, dst: testServer, flags: fSYN, seq: isn}
		expect(t, "retransmit", action, out, xdpTX, syn.bytes())
	}
	s := slotState(t, c)
	s.SentNs = 0
	setSlot(t, c, s)
	action, _ = send(t, c, Tick, testSlot)
	expect(t, "give up", action, nil, xdpDrop, nil)
	if got := stats(t, c); got.Busy != 1 || got.Retransmits != 2 || got.Timeouts != 1 || slotState(t, c).State != 0 {
		t.Errorf("counters %+v, slot %+v: want 1 busy, 2 retransmits, 1 timeout, the slot free", got, slotState(t, c))
	}
	// a fresh slot is left alone by Tick
	action, _ = send(t, c, Tick, testSlot)
	expect(t, "tick of a free slot", action, nil, xdpDrop, nil)
}

func TestClientKeepalive(t *testing.T) {
	toServer := func(flags byte, seq, ack uint32, payload int) []byte {
		return fromServer(0, 0, 0, 0).reply(flags, seq, ack, payload).bytes()
	}
	t.Run("requests on the timer, then close", func(t *testing.T) {
		c := newTestClient(t, true, time.Millisecond)
		isn := open(t, c)
		run(t, c.objs.XdpEpClient, fromServer(fSYN|fACK, 5000, isn+1, 0).bytes())
		action, _ := run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5001, isn+1+testRequest, 100).bytes())
		expect(t, "response", action, nil, xdpDrop, nil)
		if s := slotState(t, c); s.State != 3 {
			t.Fatalf("after the response: state %d, want idle", s.State)
		}
		action, _ = send(t, c, Tick, testSlot)
		expect(t, "tick before the interval", action, nil, xdpDrop, nil)
		s := slotState(t, c)
		s.SentNs = 0
		setSlot(t, c, s)
		action, out := send(t, c, Tick, testSlot)
		expect(t, "keepalive request", action, out, xdpTX, toServer(fACK|fPSH, isn+1+testRequest, 5101, testRequest))
		run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5101, isn+1+2*testRequest, 100).bytes())
		action, out = send(t, c, Close, testSlot)
		expect(t, "close", action, out, xdpTX, toServer(fFIN|fACK, isn+1+2*testRequest, 5201, 0))
		if got := stats(t, c); got.Requests != 2 || got.Responses != 2 {
			t.Errorf("counters %+v: want 2 requests and responses", got)
		}
	})
	t.Run("back to back", func(t *testing.T) {
		c := newTestClient(t, true, 0)
		if err := c.StopBackToBackAfter(time.Hour); err != nil {
			t.Fatal(err)
		}
		isn := open(t, c)
		run(t, c.objs.XdpEpClient, fromServer(fSYN|fACK, 5000, isn+1, 0).bytes())
		action, out := run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5001, isn+1+testRequest, 100).bytes())
		expect(t, "next request at once", action, out, xdpTX, toServer(fACK|fPSH, isn+1+testRequest, 5101, testRequest))
		// past the stop time the connection goes idle
		if err := c.StopBackToBackAfter(0); err != nil {
			t.Fatal(err)
		}
		action, _ = run(t, c.objs.XdpEpClient, fromServer(fACK|fPSH, 5101, isn+1+2*testRequest, 100).bytes())
		expect(t, "after the stop", action, nil, xdpDrop, nil)
		if s := slotState(t, c); s.State != 3 {
			t.Errorf("after the stop: state %d, want idle", s.State)
		}
	})
}

func TestClientConfigErrors(t *testing.T) {
	good := ClientConfig{SrcMAC: net.HardwareAddr(clientMAC[:]), DstMAC: net.HardwareAddr(lbMAC[:]), Src: clientIP,
		SrcPort: 1024, Ports: 100, Slots: 1000, Dst: testServer, RequestSize: 10}
	if err := good.check(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mutate := range map[string]func(*ClientConfig){
		"IPv6":             func(c *ClientConfig) { c.Src = netip.MustParseAddr("fd00::1") },
		"ports past 65535": func(c *ClientConfig) { c.SrcPort, c.Ports = 65000, 1000 },
		"no slots":         func(c *ClientConfig) { c.Slots = 0 },
		"huge request":     func(c *ClientConfig) { c.RequestSize = MaxPayload + 1 },
		"no MAC":           func(c *ClientConfig) { c.DstMAC = nil },
		"addresses wrap":   func(c *ClientConfig) { c.Src = netip.MustParseAddr("255.255.255.250") },
	} {
		c := good
		mutate(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
