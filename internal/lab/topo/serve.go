// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// maxStream bounds what one /stream request sends (1 GiB).
const maxStream = 1 << 30

// StreamPattern is the byte sequence /stream sends: byte i is i mod 251
// (a prime, so a lost, repeated or reordered 2^k-sized chunk shows).
type StreamPattern struct{ off int64 }

// Read fills p with the next bytes of the pattern.
func (s *StreamPattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte((s.off + int64(i)) % 251)
	}
	s.off += int64(len(p))
	return len(p), nil
}

// Serve runs a real server's services until ctx ends: HTTP on addr
// answering "<name> <peer address>" and a UDP echo on the same port
// answering "<name> <peer address> <datagram>". The peer address shows
// what FullNAT did: the balancer's local IP, not the client.
// GET /stream?bytes=N answers N bytes of StreamPattern with the real's
// name in the X-Real header (the long-lived connection of the tests);
// POST /upload reads the body (at most maxStream bytes) and answers
// "<name> <bytes> <sum of the bytes mod 2^32>".
func Serve(ctx context.Context, name, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve http on %s: %w", addr, err)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve udp on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", name, r.RemoteAddr)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64)
		if err != nil || n < 0 || n > maxStream {
			http.Error(w, fmt.Sprintf("bytes: want 0 to %d", maxStream), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Real", name)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		_, _ = io.CopyN(w, &StreamPattern{}, n)
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		n, sum, err := byteSum(io.LimitReader(r.Body, maxStream))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%s %d %d\n", name, n, sum)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
		pc.Close()
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, peer, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			reply := fmt.Sprintf("%s %s %s", name, peer, buf[:n])
			_, _ = pc.WriteTo([]byte(reply), peer)
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}

// byteSum reads r to its end and returns how many bytes it gave and their
// sum mod 2^32 (what /upload answers).
func byteSum(r io.Reader) (n int64, sum uint32, err error) {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		for _, b := range buf[:k] {
			sum += uint32(b)
		}
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, sum, nil
		}
		if err != nil {
			return n, sum, err
		}
	}
}
