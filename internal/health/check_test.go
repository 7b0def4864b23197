// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func target(t *testing.T, addr string) Target {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	return Target{Service: loadbalancer.ServiceKey{VIP: netip.MustParseAddr("10.9.9.9"), Port: 80, Proto: loadbalancer.TCP},
		Real: ap, Source: netip.MustParseAddr("127.0.0.1")}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestCheck(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "status: ok")
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		default:
			http.NotFound(w, r)
		}
	}))
	defer web.Close()
	webTLS := httptest.NewTLSServer(web.Config.Handler)
	defer webTLS.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udp.WriteTo(append([]byte("pong:"), buf[:n]...), from)
		}
	}()
	me := currentUser(t)
	host := func(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://") }
	closed := closedPort(t)

	for _, tc := range []struct {
		name  string
		check config.HealthCheck
		addr  string
		want  string // "" = healthy, else part of the error
	}{
		{"tcp up", config.HealthCheck{Type: "tcp"}, tcp.Addr().String(), ""},
		{"tcp refused", config.HealthCheck{Type: "tcp"}, closed, "refused"},
		{"tcp on another port", config.HealthCheck{Type: "tcp", Port: int(netip.MustParseAddrPort(tcp.Addr().String()).Port())}, closed, ""},
		{"http ok", config.HealthCheck{Type: "http", Path: "/ok"}, host(web.URL), ""},
		{"http body", config.HealthCheck{Type: "http", Path: "/ok", ExpectBody: "ok"}, host(web.URL), ""},
		{"http body missing", config.HealthCheck{Type: "http", Path: "/ok", ExpectBody: "ready"}, host(web.URL), `body does not contain "ready"`},
		{"http status", config.HealthCheck{Type: "http", Path: "/teapot"}, host(web.URL), "status 418, want 200"},
		{"http expected status", config.HealthCheck{Type: "http", Path: "/teapot", ExpectStatus: 418}, host(web.URL), ""},
		{"http refused", config.HealthCheck{Type: "http"}, closed, "refused"},
		{"https ok", config.HealthCheck{Type: "https", Path: "/ok"}, host(webTLS.URL), ""},
		{"udp reply", config.HealthCheck{Type: "udp", Expect: "pong:ping", Send: "ping"}, udp.LocalAddr().String(), ""},
		{"udp wrong reply", config.HealthCheck{Type: "udp", Expect: "hello"}, udp.LocalAddr().String(), `reply does not contain "hello"`},
		{"udp unreachable", config.HealthCheck{Type: "udp"}, closed, "no reply"},
		{"exec ok", config.HealthCheck{Type: "exec", Shell: true, User: me, Command: `test "$XLB_REAL_ADDR" = 127.0.0.1 && test "$XLB_VPORT" = 80`}, closed, ""},
		{"exec fails", config.HealthCheck{Type: "exec", Shell: true, User: me, Command: "echo backend sick; exit 3"}, closed, "backend sick"},
		{"exec times out", config.HealthCheck{Type: "exec", User: me, Command: "sleep 5", Timeout: config.Duration(200 * time.Millisecond)}, closed, "timed out"},
		{"exec without a shell", config.HealthCheck{Type: "exec", User: me, Command: `test "$XLB_VPORT" = 80`}, closed, "which a shell would expand"},
		{"exec exit status", config.HealthCheck{Type: "exec", User: me, Command: "false"}, closed, "exit status 1"},
		{"exec program missing", config.HealthCheck{Type: "exec", User: me, Command: "/nonexistent/check"}, closed, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.check.WithDefaults()
			start := time.Now()
			err := Check(context.Background(), c, target(t, tc.addr))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unhealthy: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Duration(c.Timeout)+time.Second {
				t.Errorf("took %v, beyond the timeout %v", d, c.Timeout)
			}
		})
	}
}
