// SPDX-License-Identifier: Apache-2.0

// Package ctsync streams a node's connections to the other nodes of a
// cluster and installs theirs, so that a flow ECMP moves to another node
// keeps its real, its local IP and port: the other node forwards it as
// its owner would, and the real's replies still go to the owner (or,
// once the owner is dead, to the node that announces its local IPs).
//
// In the spirit of IPVS's sync daemon and of loxilb's conntrack sync:
// each node's sender connects to every peer, sends all its live
// connections (a full resync) and then each new connection and state
// change as the data path reports it, plus, every refresh period, the
// connections active since the last one (their copies live as long as
// the owner's entries). The wire format is in wire.go.
//
// When sync lags, the queue of a peer fills and new events for it are
// dropped and counted; a dropped connection reaches the peer with the
// next refresh if it is still active then. A connection a peer does not
// hold when its flow moves there is broken (its packets are dropped as
// tcp_not_syn), as on a node without sync.
package ctsync

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// Source is where a node's connections come from: its data path.
type Source interface {
	SyncConns(active time.Duration, fn func(datapath.SyncConn) bool) error
}

// Sink is where the peers' connections go: the data path.
type Sink interface {
	InstallSynced(owner uint16, conns []datapath.SyncConn) (datapath.SyncStats, error)
}

// Peer is another node of the cluster.
type Peer struct {
	ID   uint16
	Name string
	// Addr is its sync listener; the connections from it must come from
	// Addr's address.
	Addr netip.AddrPort
}

// Config configures a Syncer.
type Config struct {
	// NodeID names this node's connections on the peers (1 to 65535).
	NodeID uint16
	Name   string
	// Listen is where the peers connect; the senders connect from its
	// address, which the peers check.
	Listen netip.AddrPort
	Peers  []Peer
	// Refresh is how often the connections active since the last
	// refresh are sent again (default 30 s).
	Refresh time.Duration
	// QueueLen bounds the connections waiting for one peer (default
	// 65536).
	QueueLen int
	// ReadyAfter bounds how long Ready waits for the peers' full
	// resyncs (default 5 s).
	ReadyAfter time.Duration
}

// Defaults of Config.
const (
	DefaultRefresh    = 30 * time.Second
	DefaultQueueLen   = 65536
	DefaultReadyAfter = 5 * time.Second
	// retry is how soon a sender connects again after a failure.
	retry = time.Second
	// batchWait is how long a sender waits for more events to fill a
	// frame.
	batchWait = 2 * time.Millisecond
)

// Syncer runs a node's sync: a sender per peer and a listener for the
// peers' senders.
type Syncer struct {
	cfg     Config
	src     Source
	sink    Sink
	log     *slog.Logger
	started time.Time

	out []*sender
	mu  sync.Mutex
	in  map[uint16]*InStatus
}

// New returns a Syncer of cfg; Run runs it.
func New(cfg Config, src Source, sink Sink, log *slog.Logger) *Syncer {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.ReadyAfter <= 0 {
		cfg.ReadyAfter = DefaultReadyAfter
	}
	s := &Syncer{cfg: cfg, src: src, sink: sink, log: log.With("component", "sync"), started: time.Now(), in: map[uint16]*InStatus{}}
	for _, p := range cfg.Peers {
		s.out = append(s.out, &sender{peer: p, queue: make(chan datapath.SyncConn, cfg.QueueLen)})
		s.in[p.ID] = &InStatus{}
	}
	return s
}

// Note queues a connection the data path reports for every peer; a
// peer whose queue is full misses it (counted as dropped). A peer not
// connected misses it too, uncounted: its next connection starts with a
// full resync.
func (s *Syncer) Note(c datapath.SyncConn) {
	for _, o := range s.out {
		if !o.up.Load() {
			continue
		}
		select {
		case o.queue <- c:
		default:
			o.mu.Lock()
			o.st.Dropped++
			o.mu.Unlock()
		}
	}
}

// Run listens for the peers and runs a sender per peer until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen.String())
	if err != nil {
		return fmt.Errorf("connection sync: listen on %s: %w", s.cfg.Listen, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		ln.Close()
	})
	for _, o := range s.out {
		wg.Go(func() { s.send(ctx, o) })
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				wg.Wait()
				return nil
			}
			// out of descriptors or another passing error: the peers'
			// senders retry; so does the listener
			s.log.Warn("sync: accept", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		wg.Go(func() { s.receive(ctx, conn) })
	}
}

// Ready reports whether every peer has sent its full resync, or
// ReadyAfter has passed since the start: a node should announce its VIPs
// only then, so that the flows that move to it find their connections.
func (s *Syncer) Ready() bool {
	if time.Since(s.started) >= s.cfg.ReadyAfter {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.in {
		if !st.Resynced {
			return false
		}
	}
	return true
}

// receive installs what one peer sends until it hangs up or ctx ends.
func (s *Syncer) receive(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	id, name, err := readHello(conn)
	if err != nil {
		s.log.Warn("refused a sync connection", "from", conn.RemoteAddr(), "err", err)
		return
	}
	peer, ok := s.peerOf(id)
	from, _ := netip.ParseAddrPort(conn.RemoteAddr().String())
	if !ok || from.Addr().Unmap() != peer.Addr.Addr() {
		s.log.Warn("refused a sync connection from a node not configured", "from", conn.RemoteAddr(), "node_id", id, "name", name)
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var gen uint64
	s.inStatus(id, func(st *InStatus) {
		st.gen++
		gen = st.gen
		st.Connected, st.Since, st.Resynced = true, time.Now(), false
	})
	// a peer that reconnected before this connection died is connected
	defer s.inStatus(id, func(st *InStatus) {
		if st.gen == gen {
			st.Connected, st.Since = false, time.Now()
		}
	})
	s.log.Info("sync: peer connected", "peer", peer.Name, "node_id", id)
	r := bufio.NewReaderSize(conn, 64<<10)
	var conns []datapath.SyncConn
	for {
		kind, got, err := readFrame(r, conns)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("sync: peer gone", "peer", peer.Name, "err", err)
			}
			return
		}
		conns = got
		if kind == frameResynced {
			s.inStatus(id, func(st *InStatus) { st.Resynced = true })
			continue
		}
		res, err := s.sink.InstallSynced(id, conns)
		if err != nil {
			s.log.Warn("sync: install", "peer", peer.Name, "err", err)
		}
		s.inStatus(id, func(st *InStatus) {
			st.Received += uint64(len(conns))
			st.Installs.Add(res)
		})
	}
}

func (s *Syncer) peerOf(id uint16) (Peer, bool) {
	for _, p := range s.cfg.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

func (s *Syncer) inStatus(id uint16, fn func(*InStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.in[id])
}
