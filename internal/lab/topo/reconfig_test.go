// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// keepAlive is an HTTP/1.1 connection the test sends requests on one
// after the other.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialKeepAlive connects from inside namespace ns (the socket stays
// there; reads and writes may then happen on any thread).
func dialKeepAlive(ctx context.Context, ns string, addr netip.AddrPort) (*keepAlive, error) {
	var conn net.Conn
	err := netns.Run(ns, func() error {
		var err error
		d := net.Dialer{Timeout: 3 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", addr.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s from %s: %w", addr, ns, err)
	}
	return &keepAlive{conn: conn, r: bufio.NewReader(conn)}, nil
}

// get sends GET path and returns the response; its body must be read
// before the next request.
func (k *keepAlive) get(path string, timeout time.Duration) (*http.Response, error) {
	_ = k.conn.SetDeadline(time.Now().Add(timeout))
	req, _ := http.NewRequest(http.MethodGet, "http://"+k.conn.RemoteAddr().String()+path, nil)
	if err := req.Write(k.conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(k.r, req)
}

// getBody sends GET path and returns the body, trimmed.
func (k *keepAlive) getBody(path string) (string, error) {
	resp, err := k.get(path, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

// readPaced reads a /stream body of size bytes, checking each byte
// against StreamPattern. For its first paced chunks it waits for a tick
// on applied before each chunk (or for applied to close), so that the
// changes a test makes land while the stream is flowing, never after it
// ended.
func readPaced(body io.Reader, size int64, chunk int, paced int64, applied <-chan struct{}) error {
	want := &StreamPattern{}
	got, expect := make([]byte, chunk), make([]byte, chunk)
	var off int64
	for off < size {
		if applied != nil && off < paced*int64(chunk) {
			if _, ok := <-applied; !ok {
				applied = nil
			}
		}
		n, err := io.ReadFull(body, got[:min(int64(chunk), size-off)])
		_, _ = want.Read(expect[:n])
		if !bytes.Equal(got[:n], expect[:n]) {
			return fmt.Errorf("stream corrupt in the %d bytes at offset %d", n, off)
		}
		off += int64(n)
		if err != nil {
			return fmt.Errorf("stream ended at %d of %d bytes: %w", off, size, err)
		}
	}
	return nil
}

// pacedStream reads a /stream body in the background, a chunk after each
// tick for its first paced chunks (readPaced).
type pacedStream struct {
	ticks chan struct{}
	done  chan error
	body  io.Closer
}

// startStream asks the lab's server behind vip, from the client, for a
// stream of size bytes on a keepalive connection, read a chunk per tick
// for its first paced chunks; it returns the stream and the real that
// serves it. The connection closes at the test's end.
func startStream(t *testing.T, ctx context.Context, topo Topology, vip netip.AddrPort, size int64, chunk int, paced int64) (*pacedStream, string) {
	t.Helper()
	conn, err := dialKeepAlive(ctx, topo.Client(), vip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.conn.Close() })
	resp, err := conn.get(fmt.Sprintf("/stream?bytes=%d", size), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p := &pacedStream{ticks: make(chan struct{}), done: make(chan error, 1), body: resp.Body}
	go func() { p.done <- readPaced(resp.Body, size, chunk, paced, p.ticks) }()
	return p, resp.Header.Get("X-Real")
}

// tick lets the reader take its next chunk; the test fails, saying when,
// if the stream ended badly meanwhile.
func (p *pacedStream) tick(t *testing.T, when string) {
	t.Helper()
	select {
	case p.ticks <- struct{}{}:
	case err := <-p.done:
		t.Fatalf("%s: %v", when, err)
	}
}

// finish lets the reader read the rest and fails the test unless the
// stream completed byte for byte.
func (p *pacedStream) finish(t *testing.T) {
	t.Helper()
	close(p.ticks)
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	_ = p.body.Close()
}

// realModel is what the test believes the TCP service's reals are.
type realModel struct {
	addr   map[string]netip.Addr // real name -> address
	weight map[string]int        // present reals -> weight
}

// TestLiveReconfiguration streams a long response through the balancer
// while 100 changes (reals removed and added back, weights changed, the
// streaming real drained) go through the API: the stream completes
// byte for byte, and new connections then follow the final
// configuration only.
func TestLiveReconfiguration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 3, "wrr")
	client := d.Client()
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	svcPath := api.ServicePath("tcp", topo.VIP().String(), ServicePort)

	const changes, chunk = 100, 256 << 10
	const size = (changes + 28) * chunk // 32 MiB: a quarter is left after the changes
	paced, streamReal := startStream(t, ctx, topo, vip, size, chunk, changes)
	m := realModel{addr: map[string]netip.Addr{}, weight: map[string]int{}}
	var others []string
	for i := 1; i <= topo.Reals; i++ {
		name := fmt.Sprintf("real%d", i)
		m.addr[name], m.weight[name] = topo.RealAddr(i), 1
		if name != streamReal {
			others = append(others, name)
		}
	}
	if len(others) != topo.Reals-1 {
		t.Fatalf("stream answered by %q, not one of the reals", streamReal)
	}

	plan := m.plan(streamReal, others, changes)
	for i, c := range plan {
		if _, err := client.Change(ctx, c.method, svcPath+c.path, c.body); err != nil {
			t.Fatalf("change %d (%s %s): %v", i+1, c.method, c.path, err)
		}
		paced.tick(t, fmt.Sprintf("after change %d of %d", i+1, changes))
	}
	paced.finish(t)

	// The daemon's configuration is the test's model, and new
	// connections go only to reals that have a weight.
	cfg, err := client.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, wantReals := realsOf(cfg, topo.VIP()), m.configured(); got != wantReals {
		t.Fatalf("daemon's reals after the changes: %s, want %s", got, wantReals)
	}
	seen := map[string]int{}
	for i := 0; i < 30; i++ {
		name, err := fetchReal(ctx, topo, vip)
		if err != nil {
			t.Fatalf("new connection %d: %v", i, err)
		}
		seen[name]++
	}
	for name, w := range m.weight {
		if w > 0 && seen[name] == 0 {
			t.Errorf("real %s (weight %d) got none of 30 new connections: %v", name, w, seen)
		}
	}
	for name, n := range seen {
		if m.weight[name] == 0 {
			t.Errorf("real %s got %d new connections, but it is drained or removed (want %v)", name, n, m.weight)
		}
	}
}

// change is one API call on the service.
type change struct {
	method, path string
	body         any
}

// plan makes n changes that cycle through removing and re-adding the
// other reals and changing weights (the streaming real's among them,
// down to 0), ending with the streaming real drained, the first other
// real at weight 3 and the second removed. It updates the model.
func (m *realModel) plan(streamReal string, others []string, n int) []change {
	var out []change
	realPath := func(name string) string {
		return fmt.Sprintf("/reals/%s/%d", m.addr[name], ServicePort)
	}
	toggle := func(name string) {
		if _, ok := m.weight[name]; ok {
			out = append(out, change{http.MethodDelete, realPath(name), nil})
			delete(m.weight, name)
			return
		}
		w := 2
		out = append(out, change{http.MethodPost, "/reals", config.Real{Address: m.addr[name].String(), Port: ServicePort, Weight: &w}})
		m.weight[name] = w
	}
	setWeight := func(name string, w int) {
		if _, ok := m.weight[name]; !ok {
			toggle(name)
		}
		if m.weight[name] == w { // every change changes something
			w = (w + 1) % 5
		}
		out = append(out, change{http.MethodPut, realPath(name), api.Weight(w)})
		m.weight[name] = w
	}
	// each round adds at most 2 changes, the final ones at most 4
	for i := 0; len(out) < n-6; i++ {
		round := i / 4
		switch i % 4 {
		case 0:
			toggle(others[0])
		case 1:
			toggle(others[1])
		case 2:
			setWeight(streamReal, round%5)
		case 3:
			setWeight(others[round%2], 1+round%4)
		}
	}
	setWeight(streamReal, 0)
	setWeight(others[0], 3)
	if _, ok := m.weight[others[1]]; ok {
		toggle(others[1])
	}
	for p := 0; len(out) < n; p++ {
		setWeight(others[0], 4-p%2)
	}
	return out
}

// configured is the model as "addr:weight" in real order.
func (m *realModel) configured() string {
	var parts []string
	for i := 1; i <= len(m.addr); i++ {
		name := fmt.Sprintf("real%d", i)
		if w, ok := m.weight[name]; ok {
			parts = append(parts, fmt.Sprintf("%s:%d", m.addr[name], w))
		}
	}
	return strings.Join(parts, " ")
}

// realsOf is the TCP service on vip's reals as "addr:weight", sorted by
// address (the lab's reals sort in the order of their names).
func realsOf(cfg *config.Config, vip netip.Addr) string {
	var addrs []netip.Addr
	weights := map[netip.Addr]int{}
	for _, s := range cfg.Services {
		if s.VIP != vip.String() || s.Protocol != "tcp" {
			continue
		}
		for _, r := range s.Reals {
			a, _ := netip.ParseAddr(r.Address)
			w := 1
			if r.Weight != nil {
				w = *r.Weight
			}
			addrs, weights[a] = append(addrs, a), w
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf("%s:%d", a, weights[a]))
	}
	return strings.Join(parts, " ")
}
