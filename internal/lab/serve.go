// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve runs a real server's services until ctx ends: HTTP on addr
// answering "<name> <peer address>" and a UDP echo on the same port
// answering "<name> <peer address> <datagram>". The peer address shows
// what FullNAT did: the balancer's local IP, not the client.
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
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s\n", name, r.RemoteAddr)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
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
