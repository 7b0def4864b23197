// SPDX-License-Identifier: Apache-2.0

package ctsync

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

var (
	conn4 = datapath.SyncConn{Proto: loadbalancer.TCP, State: loadbalancer.StateEstablished,
		Client: netip.MustParseAddrPort("203.0.113.7:40000"), VIP: netip.MustParseAddrPort("192.0.2.10:80"),
		Local: netip.MustParseAddrPort("10.0.2.11:1025"), Real: netip.MustParseAddrPort("10.0.10.11:8080"), Idle: 3 * time.Second}
	conn6 = datapath.SyncConn{Proto: loadbalancer.UDP, State: loadbalancer.StateUDP,
		Client: netip.MustParseAddrPort("[2001:db8::7]:5353"), VIP: netip.MustParseAddrPort("[2001:db8:10::10]:53"),
		Local: netip.MustParseAddrPort("[2001:db8:2::11]:2000"), Real: netip.MustParseAddrPort("[2001:db8:a::11]:53")}
)

// TestWireRoundTrip: records read back as written, at their stated
// sizes (32 bytes an IPv4 connection, 80 an IPv6 one, 3 a frame).
func TestWireRoundTrip(t *testing.T) {
	b := appendFrame(nil, frameConns, []datapath.SyncConn{conn4, conn6})
	if len(b) != 3+32+80 {
		t.Fatalf("frame of %d bytes, want %d", len(b), 3+32+80)
	}
	kind, got, err := readFrame(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil || kind != frameConns || len(got) != 2 || got[0] != conn4 || got[1] != conn6 {
		t.Fatalf("read back %d %+v %v", kind, got, err)
	}
	long := conn4
	long.Idle = 100000 * time.Second
	_, got, _ = readFrame(bufio.NewReader(bytes.NewReader(appendFrame(nil, frameConns, []datapath.SyncConn{long}))), nil)
	if got[0].Idle != 65535*time.Second {
		t.Errorf("idle %v, want 65535 s (the most a record holds)", got[0].Idle)
	}
	var h bytes.Buffer
	if err := writeHello(&h, 7, "node7"); err != nil {
		t.Fatal(err)
	}
	if id, name, err := readHello(&h); id != 7 || name != "node7" || err != nil {
		t.Errorf("hello read back %d %q %v", id, name, err)
	}
}

func TestWireRefuses(t *testing.T) {
	good := appendFrame(nil, frameConns, []datapath.SyncConn{conn4})
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"unknown kind", func(b []byte) []byte { b[0] = 9; return b }},
		{"too many records", func(b []byte) []byte { b[1], b[2] = 0xff, 0xff; return b }},
		{"unknown family", func(b []byte) []byte { b[3] = 5; return b }},
		{"unknown protocol", func(b []byte) []byte { b[4] = 1; return b }},
		{"unknown state", func(b []byte) []byte { b[5] = 200; return b }},
		{"a UDP state for TCP", func(b []byte) []byte { b[5] = byte(loadbalancer.StateUDP); return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(bytes.Clone(good))
			if _, _, err := readFrame(bufio.NewReader(bytes.NewReader(b)), nil); !errors.Is(err, errBadRecord) {
				t.Errorf("err %v, want a bad record", err)
			}
		})
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader(good[:20])), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a cut frame: %v", err)
	}
	if _, _, err := readHello(bytes.NewReader([]byte("GET / HTTP/1.1\r\n\r\n"))); err == nil {
		t.Error("an HTTP request read as a hello")
	}
}

// fakeNode is a data path: connections to send, and what was installed.
type fakeNode struct {
	mu        sync.Mutex
	conns     []datapath.SyncConn
	installed map[uint16][]datapath.SyncConn
}

func (f *fakeNode) SyncConns(active time.Duration, fn func(datapath.SyncConn) bool) error {
	f.mu.Lock()
	conns := append([]datapath.SyncConn(nil), f.conns...)
	f.mu.Unlock()
	for _, c := range conns {
		if (active == 0 || c.Idle <= active) && !fn(c) {
			break
		}
	}
	return nil
}

func (f *fakeNode) InstallSynced(owner uint16, conns []datapath.SyncConn) (datapath.SyncStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.installed == nil {
		f.installed = map[uint16][]datapath.SyncConn{}
	}
	f.installed[owner] = append(f.installed[owner], conns...)
	return datapath.SyncStats{Installed: uint64(len(conns))}, nil
}

func (f *fakeNode) got(owner uint16) []datapath.SyncConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]datapath.SyncConn(nil), f.installed[owner]...)
}

func freeAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return netip.MustParseAddrPort(ln.Addr().String())
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTwoNodes: each node gets the other's connections, the full
// resync first (and Ready with it), then events.
func TestTwoNodes(t *testing.T) {
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := &fakeNode{conns: []datapath.SyncConn{conn4}}
	b := &fakeNode{conns: []datapath.SyncConn{conn6}}
	log := slog.New(slog.DiscardHandler)
	sa := New(Config{NodeID: 1, Name: "a", Listen: addrA, Peers: []Peer{{ID: 2, Name: "b", Addr: addrB}}, ReadyAfter: time.Hour}, a, a, log)
	sb := New(Config{NodeID: 2, Name: "b", Listen: addrB, Peers: []Peer{{ID: 1, Name: "a", Addr: addrA}}, ReadyAfter: time.Hour}, b, b, log)
	if sa.Ready() {
		t.Error("ready before the peer's resync")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []*Syncer{sa, sb} {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	eventually(t, "resyncs", func() bool { return len(b.got(1)) == 1 && len(a.got(2)) == 1 && sa.Ready() && sb.Ready() })
	if b.got(1)[0] != conn4 || a.got(2)[0] != conn6 {
		t.Errorf("resync installed %+v and %+v", b.got(1), a.got(2))
	}
	next := conn4
	next.Client = netip.MustParseAddrPort("203.0.113.8:40001")
	sa.Note(next)
	eventually(t, "event", func() bool { return len(b.got(1)) == 2 })
	if b.got(1)[1] != next {
		t.Errorf("event installed as %+v", b.got(1)[1])
	}
	st := sa.Status()
	if len(st) != 1 || !st[0].Out.Connected || st[0].Out.Sent != 2 || st[0].Out.Resyncs != 1 || !st[0].In.Resynced || st[0].In.Received != 1 ||
		st[0].In.Installs.Installed != 1 {
		t.Errorf("status %+v", st)
	}
}

// TestRefusesStrangers: a connection whose hello names a node not
// configured, or comes from another address than the node's, installs
// nothing.
func TestRefusesStrangers(t *testing.T) {
	addrA := freeAddr(t)
	a := &fakeNode{}
	// node 2 is configured at 127.0.0.2: connections from 127.0.0.1 are not it
	sa := New(Config{NodeID: 1, Listen: addrA, Peers: []Peer{{ID: 2, Addr: netip.MustParseAddrPort("127.0.0.2:1")}}}, a, a, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sa.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, id := range []uint16{2, 3} {
		var conn net.Conn
		eventually(t, "dial", func() bool {
			var err error
			conn, err = net.Dial("tcp", addrA.String())
			return err == nil
		})
		w := bufio.NewWriter(conn)
		_ = writeHello(w, id, "stranger")
		_ = writeFrame(w, frameConns, []datapath.SyncConn{conn4})
		_ = w.Flush()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("node %d: the connection stayed open", id)
		}
		conn.Close()
	}
	if got := a.got(2); len(got) != 0 {
		t.Errorf("installed from strangers: %+v", got)
	}
}

// TestLagDrops: events beyond a connected peer's queue are dropped and
// counted; a peer not connected gets none.
func TestLagDrops(t *testing.T) {
	a := &fakeNode{}
	sa := New(Config{NodeID: 1, Listen: freeAddr(t), Peers: []Peer{{ID: 2, Addr: freeAddr(t)}}, QueueLen: 4}, a, a, slog.New(slog.DiscardHandler))
	sa.Note(conn4)
	if st := sa.Status()[0].Out; st.Dropped != 0 || st.Queued != 0 {
		t.Errorf("out status %+v: a peer not connected gets nothing queued (its next connection resyncs)", st)
	}
	sa.out[0].up.Store(true) // as while connected
	for range 10 {
		sa.Note(conn4)
	}
	if st := sa.Status()[0].Out; st.Dropped != 6 || st.Queued != 4 {
		t.Errorf("out status %+v, want 6 dropped and 4 queued", st)
	}
}
