// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// HTTPConn is a keep-alive HTTP/1.1 connection to the lab's servers
// (Serve), spoken by hand on a socket made in a lab namespace, which
// http.Client's own dialing would not be.
type HTTPConn struct {
	Conn net.Conn
	r    *bufio.Reader
}

// NewHTTPConn speaks HTTP on conn.
func NewHTTPConn(conn net.Conn) *HTTPConn {
	return &HTTPConn{Conn: conn, r: bufio.NewReaderSize(conn, 256<<10)}
}

// Request sends GET path and returns the response, whose body the
// caller reads and closes; a status other than 200 is an error.
func (h *HTTPConn) Request(path string) (*http.Response, error) {
	if _, err := io.WriteString(h.Conn, "GET "+path+" HTTP/1.1\r\nHost: xlb\r\n\r\n"); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp, nil
}

// Get fetches path and returns its body, trimmed.
func (h *HTTPConn) Get(path string) (string, error) {
	resp, err := h.Request(path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}
