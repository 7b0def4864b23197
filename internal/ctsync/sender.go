// SPDX-License-Identifier: Apache-2.0

package ctsync

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// sender streams this node's connections to one peer.
type sender struct {
	peer  Peer
	queue chan datapath.SyncConn
	up    atomic.Bool // connected: Note queues for it

	mu sync.Mutex
	st OutStatus
}

// OutStatus is what a node sent one peer.
type OutStatus struct {
	Connected bool
	Since     time.Time // connected or disconnected since
	// Sent counts the connections sent, in full resyncs, events and
	// refreshes; Resyncs the full resyncs.
	Sent, Resyncs uint64
	// Dropped counts the events lost to a full queue (sync lagging).
	Dropped   uint64
	Queued    int
	LastError string
}

// InStatus is what a node received from one peer.
type InStatus struct {
	Connected bool
	Since     time.Time
	// Resynced: the peer's full resync of this connection is in.
	Resynced bool
	Received uint64
	Installs datapath.SyncStats

	gen uint64 // counts the peer's connections
}

// PeerStatus is a peer's sync, both ways.
type PeerStatus struct {
	Peer
	Out OutStatus
	In  InStatus
}

// Status returns every peer's sync.
func (s *Syncer) Status() []PeerStatus {
	out := make([]PeerStatus, len(s.out))
	for i, o := range s.out {
		o.mu.Lock()
		out[i] = PeerStatus{Peer: o.peer, Out: o.st}
		o.mu.Unlock()
		out[i].Out.Queued = len(o.queue)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		out[i].In = *s.in[out[i].ID]
	}
	return out
}

// send connects to the peer, again after every failure, until ctx ends.
func (s *Syncer) send(ctx context.Context, o *sender) {
	for ctx.Err() == nil {
		err := s.sendOnce(ctx, o)
		o.mu.Lock()
		if o.st.Connected {
			o.st.Connected, o.st.Since = false, time.Now()
		}
		if err != nil && ctx.Err() == nil {
			o.st.LastError = err.Error()
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

// sendOnce is one connection to the peer: the hello, a full resync, then
// events and refreshes until an error or ctx's end.
func (s *Syncer) sendOnce(ctx context.Context, o *sender) error {
	// from the address the peer checks, whatever the route's source
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: s.cfg.Listen.Addr().AsSlice()}}
	conn, err := d.DialContext(ctx, "tcp", o.peer.Addr.String())
	if err != nil {
		return err
	}
	defer conn.Close()
	// what was queued before is in the full resync, and newer
	for len(o.queue) > 0 {
		<-o.queue
	}
	o.up.Store(true)
	defer o.up.Store(false)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	w := bufio.NewWriterSize(conn, 64<<10)
	if err := writeHello(w, s.cfg.NodeID, s.cfg.Name); err != nil {
		return err
	}
	o.mu.Lock()
	o.st.Connected, o.st.Since, o.st.LastError = true, time.Now(), ""
	o.st.Resyncs++
	o.mu.Unlock()
	s.log.Info("sync: sending to peer", "peer", o.peer.Name, "addr", o.peer.Addr)
	if err := s.walk(w, o, 0); err != nil {
		return fmt.Errorf("full resync: %w", err)
	}
	if err := writeFrame(w, frameResynced, nil); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	refresh := time.NewTicker(s.cfg.Refresh)
	defer refresh.Stop()
	batch := make([]datapath.SyncConn, 0, maxRecords)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			// a little more than the period, so that no connection
			// active at its start is missed
			if err := s.walk(w, o, s.cfg.Refresh+2*time.Second); err != nil {
				return fmt.Errorf("refresh: %w", err)
			}
		case c := <-o.queue:
			batch = append(batch[:0], c)
			timer := time.NewTimer(batchWait)
		fill:
			for len(batch) < maxRecords {
				select {
				case c := <-o.queue:
					batch = append(batch, c)
				case <-timer.C:
					break fill
				}
			}
			timer.Stop()
			if err := writeFrame(w, frameConns, batch); err != nil {
				return err
			}
			o.count(len(batch))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// walk sends the connections active within active (all with 0).
func (s *Syncer) walk(w *bufio.Writer, o *sender, active time.Duration) error {
	batch := make([]datapath.SyncConn, 0, maxRecords)
	var werr error
	flush := func() {
		if len(batch) > 0 && werr == nil {
			werr = writeFrame(w, frameConns, batch)
			o.count(len(batch))
			batch = batch[:0]
		}
	}
	err := s.src.SyncConns(active, func(c datapath.SyncConn) bool {
		batch = append(batch, c)
		if len(batch) == maxRecords {
			flush()
		}
		return werr == nil
	})
	flush()
	if err != nil {
		return err
	}
	return werr
}

func (o *sender) count(n int) {
	o.mu.Lock()
	o.st.Sent += uint64(n)
	o.mu.Unlock()
}

func writeFrame(w *bufio.Writer, kind byte, conns []datapath.SyncConn) error {
	_, err := w.Write(appendFrame(nil, kind, conns))
	return err
}
