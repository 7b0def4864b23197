// SPDX-License-Identifier: Apache-2.0

package health

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Target is one real of one service, as a check sees it.
type Target struct {
	Service loadbalancer.ServiceKey
	Real    netip.AddrPort
	// Source is the address checks are sent from (the service's first
	// local IP); invalid lets the kernel choose.
	Source netip.Addr
}

func (t Target) String() string { return fmt.Sprintf("%s real %s", t.Service, t.Real) }

// addr is the address and port the check connects to: the check's port
// or the real's (a port-0 real keeps the client's port: the service's).
func (t Target) addr(c config.HealthCheck) netip.AddrPort {
	port := uint16(c.Port)
	if port == 0 {
		port = t.Real.Port()
	}
	if port == 0 {
		port = t.Service.Port
	}
	return netip.AddrPortFrom(t.Real.Addr(), port)
}

// dialer binds to the target's source address.
func (t Target) dialer(timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if t.Source.IsValid() && t.Source.Is4() == t.Real.Addr().Is4() {
		d.LocalAddr = &net.TCPAddr{IP: t.Source.AsSlice()}
	}
	return d
}

// maxBody bounds what an HTTP check reads of a response body.
const maxBody = 64 << 10

// Check runs one check of the target and returns nil when the real is
// healthy, or why it is not. c must have its defaults (WithDefaults).
// Exec checks run here without a bound on how many run at once; a
// Monitor's are bounded.
func Check(ctx context.Context, c config.HealthCheck, t Target) error {
	return check(ctx, c, t, nil)
}

// check is Check with the limiter of exec checks (nil: none).
func check(ctx context.Context, c config.HealthCheck, t Target, slots *Limiter) error {
	timeout := time.Duration(c.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Type {
	case "tcp":
		conn, err := t.dialer(timeout).DialContext(ctx, "tcp", t.addr(c).String())
		if err != nil {
			return err
		}
		return conn.Close()
	case "http", "https":
		return checkHTTP(ctx, c, t, timeout)
	case "udp":
		return checkUDP(ctx, c, t, timeout)
	case "exec":
		return checkExec(ctx, c, t, slots)
	}
	return fmt.Errorf("unknown check type %q", c.Type)
}

func checkHTTP(ctx context.Context, c config.HealthCheck, t Target, timeout time.Duration) error {
	tr := &http.Transport{
		DialContext:       t.dialer(timeout).DialContext,
		DisableKeepAlives: true,
		// a real's certificate is for the service's name, not for the
		// real's address: keepalived's SSL_GET does not verify either
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := fmt.Sprintf("%s://%s%s", c.Type, t.addr(c), c.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if c.Host != "" {
		req.Host = c.Host
	}
	req.Header.Set("User-Agent", "xlb-health-check")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if resp.StatusCode != c.ExpectStatus {
		return fmt.Errorf("GET %s: status %d, want %d", c.Path, resp.StatusCode, c.ExpectStatus)
	}
	if c.ExpectBody != "" && !bytes.Contains(body, []byte(c.ExpectBody)) {
		return fmt.Errorf("GET %s: body does not contain %q", c.Path, c.ExpectBody)
	}
	return nil
}

// checkUDP sends the datagram on a connected socket and waits for a
// reply; an ICMP port unreachable surfaces as a read error.
func checkUDP(ctx context.Context, c config.HealthCheck, t Target, timeout time.Duration) error {
	d := t.dialer(timeout)
	if d.LocalAddr != nil {
		d.LocalAddr = &net.UDPAddr{IP: t.Source.AsSlice()}
	}
	conn, err := d.DialContext(ctx, "udp", t.addr(c).String())
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte(c.Send)); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if err != nil {
		return fmt.Errorf("no reply: %w", err)
	}
	if c.Expect != "" && !bytes.Contains(buf[:n], []byte(c.Expect)) {
		return fmt.Errorf("reply does not contain %q", c.Expect)
	}
	return nil
}

func sourceString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
