// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Held are long-lived connections from the client to the VIP, each
// asking for / on its own keep-alive HTTP connection every interval, as
// the established connections whose fate a node change decides.
type Held struct {
	conns  []*heldConn
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type heldConn struct {
	*topo.HTTPConn
	first string // the first answer: the real and the local IP:port it saw

	mu       sync.Mutex
	broken   error
	answers  int
	lastOK   time.Time
	maxStall time.Duration
}

// heldTimeout is how long a held connection waits for one answer before
// it counts as broken: longer than a router takes to notice a dead node
// (the lab's hold time), so that a stall is not counted as a break.
const heldTimeout = 15 * time.Second

// Hold opens n connections from the client to the VIP (each its own
// source port, so ECMP spreads them) and keeps them asking every
// interval until Stop.
func (c Cluster) Hold(ctx context.Context, n int, interval time.Duration) (*Held, error) {
	vip := netip.AddrPortFrom(c.VIP(), topo.ServicePort).String()
	h := &Held{}
	err := netns.Run(c.Client(), func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		for i := range n {
			conn, err := d.DialContext(ctx, "tcp", vip)
			if err != nil {
				return fmt.Errorf("held connection %d: %w", i, err)
			}
			h.conns = append(h.conns, &heldConn{HTTPConn: topo.NewHTTPConn(conn)})
		}
		return nil
	})
	if err != nil {
		h.close()
		return nil, err
	}
	for i, hc := range h.conns {
		answer, err := hc.ask()
		if err != nil {
			h.close()
			return nil, fmt.Errorf("held connection %d: first request: %w", i, err)
		}
		hc.first, hc.lastOK = answer, time.Now()
	}
	ctx, h.cancel = context.WithCancel(ctx)
	for _, hc := range h.conns {
		h.wg.Go(func() { hc.run(ctx, interval) })
	}
	return h, nil
}

// ask sends one request and reads its answer.
func (hc *heldConn) ask() (string, error) {
	_ = hc.Conn.SetDeadline(time.Now().Add(heldTimeout))
	return hc.Get("/")
}

func (hc *heldConn) run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		answer, err := hc.ask()
		now := time.Now()
		hc.mu.Lock()
		switch {
		case err != nil:
			hc.broken = err
		case answer != hc.first:
			hc.broken = fmt.Errorf("answered by %q, first by %q", answer, hc.first)
		default:
			hc.answers++
			hc.maxStall = max(hc.maxStall, now.Sub(hc.lastOK))
			hc.lastOK = now
		}
		broken := hc.broken != nil
		hc.mu.Unlock()
		if broken {
			return
		}
	}
}

// HeldReport is the fate of the held connections so far.
type HeldReport struct {
	Conns, Broken int
	// Answers counts the requests answered; MaxStall is the longest
	// time a connection went without an answer.
	Answers  int
	MaxStall time.Duration
	// Errors are the first few breaks.
	Errors []string
	// Nodes counts the connections by the node whose local IP their real
	// saw (the owner).
	Nodes map[int]int
}

// Report says how the held connections fare.
func (h *Held) Report(c Cluster) HeldReport {
	r := HeldReport{Conns: len(h.conns), Nodes: map[int]int{}}
	for _, hc := range h.conns {
		hc.mu.Lock()
		if hc.broken != nil {
			r.Broken++
			if len(r.Errors) < 5 {
				r.Errors = append(r.Errors, hc.broken.Error())
			}
		}
		r.Answers += hc.answers
		r.MaxStall = max(r.MaxStall, hc.maxStall)
		hc.mu.Unlock()
		if f := strings.Fields(hc.first); len(f) == 2 {
			if ap, err := netip.ParseAddrPort(f[1]); err == nil {
				r.Nodes[c.NodeIndex(ap.Addr())]++
			}
		}
	}
	return r
}

// Stop ends the requests and closes the connections.
func (h *Held) Stop() {
	if h.cancel != nil {
		h.cancel()
	}
	h.wg.Wait()
	h.close()
}

func (h *Held) close() {
	for _, hc := range h.conns {
		hc.Conn.Close()
	}
}

// NewConnsBack opens a new connection to the VIP every interval from the
// client, from start until limit, and returns how long after start the
// last one failed (0: none failed): the time until new connections
// succeed again after a node's death.
func (c Cluster) NewConnsBack(ctx context.Context, start time.Time, interval, limit time.Duration) (time.Duration, int, error) {
	vip := netip.AddrPortFrom(c.VIP(), topo.ServicePort).String()
	var lastFail time.Duration
	failed := 0
	err := netns.Run(c.Client(), func() error {
		for time.Since(start) < limit {
			tried := time.Since(start)
			if _, err := topo.HTTPGetWithin(ctx, vip, 500*time.Millisecond); err != nil {
				lastFail = tried
				failed++
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(interval):
			}
		}
		return nil
	})
	return lastFail, failed, err
}
