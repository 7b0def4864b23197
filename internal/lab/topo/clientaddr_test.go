// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// Ports of the PROXY v2 lab test: nginx and haproxy take the header,
// nginx also serves haproxy's backend without it.
const (
	portNginxProxy   = 8081
	portHAProxyProxy = 8082
	portNginxPlain   = 8083
)

// proxyNginxConfig serves PUT and GET of files under dir (its worker as
// root: dir is the test's own, closed to others), on the PROXY
// ports (the header required) and on the plain one, and logs every
// request with the client address the header gave.
func proxyNginxConfig(dir string) string {
	return fmt.Sprintf(`daemon off;
user root;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    client_max_body_size 16m;
    log_format pp '$proxy_protocol_addr $proxy_protocol_port $request_method $request_uri $status';
    server {
        listen %[2]d proxy_protocol;
        listen [::]:%[2]d proxy_protocol ipv6only=on;
        access_log %[1]s/access.log pp;
        root %[1]s/files;
        location / { dav_methods PUT; create_full_put_path on; }
    }
    server {
        listen 127.0.0.1:%[3]d;
        access_log off;
        root %[1]s/files;
        location / { dav_methods PUT; create_full_put_path on; }
    }
}
`, dir, portNginxProxy, portNginxPlain)
}

// proxyHAProxyConfig takes the header on its port and logs the client
// address it gave, in front of nginx's plain port.
func proxyHAProxyConfig() string {
	return fmt.Sprintf(`global
    maxconn 1024
defaults
    mode http
    log stdout format raw local0
    timeout connect 5s
    timeout client 1m
    timeout server 1m
frontend pp
    bind :%[1]d accept-proxy
    bind :::%[1]d v6only accept-proxy
    log-format "%%ci %%cp %%HM %%HU %%ST"
    default_backend files
backend files
    server nginx 127.0.0.1:%[2]d
`, portHAProxyProxy, portNginxPlain)
}

// startIn starts a server in namespace ns as a child process with its
// output in logFile, stopped at the test's end.
func startIn(t *testing.T, topo Topology, ns, logFile string, name string, args ...string) {
	t.Helper()
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := topo.Exec(ns, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("start %s in %s: %v", name, ns, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		log.Close()
	})
}

// lossOnReal drops one frame in lossEvery of the PROXY ports' traffic in
// and out of the real (nft numgen: this kernel has no netem), so that
// retransmissions happen, the first segment's among them.
func lossOnReal(t *testing.T, topo Topology, real int, lossEvery int) {
	t.Helper()
	rules := fmt.Sprintf(`table inet xlbloss {
    chain in { type filter hook input priority -300; iifname != "lo" tcp dport { %[1]d, %[2]d } numgen random mod %[3]d == 0 drop; }
    chain out { type filter hook output priority -300; oifname != "lo" tcp sport { %[1]d, %[2]d } numgen random mod %[3]d == 0 drop; }
}
`, portNginxProxy, portHAProxyProxy, lossEvery)
	cmd := topo.Exec(topo.Real(real), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft loss rules: %v: %s", err, out)
	}
}

// proxyClient is one client connection of the test and what it saw.
type proxyClient struct {
	addr  netip.AddrPort // the VIP and port it went to
	local netip.AddrPort // its own address and port
	err   error
}

// putGet uploads body to path over one connection and downloads it back
// over the same one (keep-alive), byte for byte.
func putGet(ctx context.Context, conn net.Conn, addr, path string, body []byte) error {
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	put, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	if err := roundTrip(conn, br, put, nil); err != nil {
		return fmt.Errorf("PUT: %w", err)
	}
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	var got bytes.Buffer
	if err := roundTrip(conn, br, get, &got); err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	if !bytes.Equal(got.Bytes(), body) {
		return fmt.Errorf("GET returned %d bytes that differ from the %d put", got.Len(), len(body))
	}
	return nil
}

// roundTrip sends req on conn and reads its answer from br, its body into
// w (when not nil); an answer other than 2xx is an error.
func roundTrip(conn net.Conn, br *bufio.Reader, req *http.Request, w io.Writer) error {
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	defer resp.Body.Close()
	if w == nil {
		w = io.Discard
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// TestProxyProtocolV2ToNginxAndHAProxy: services with client_address
// proxy-v2 in front of nginx (proxy_protocol) and haproxy (accept-proxy)
// on a real, over IPv4 and IPv6, with 1 frame in 25 of their traffic
// dropped at the real. Many connections at once each upload 1 MiB and
// download it back byte for byte, and each connection's requests are
// logged by the application with the client's own address and port.
func TestProxyProtocolV2ToNginxAndHAProxy(t *testing.T) {
	for _, tool := range []string{"nginx", "haproxy", "nft"} {
		testenv.RequireTool(t, tool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := testTopology(t, 1)
	config := topo.Config("rr")
	for _, port := range []int{portNginxProxy, portHAProxyProxy} {
		for _, s := range [][2]netip.Addr{{topo.VIP(), topo.LocalIP()}, {topo.VIP6(), topo.LocalIP6()}} {
			real := topo.RealAddr(1)
			if s[0].Is6() {
				real = topo.RealAddr6(1)
			}
			config += fmt.Sprintf("  - {vip: %q, port: %d, protocol: tcp, client_address: proxy-v2, local_ips: [%q], reals: [{address: %q, port: %d}]}\n",
				s[0], port, s[1], real, port)
		}
	}
	startLabWith(t, ctx, topo, config)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	hconf := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(proxyNginxConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hconf, []byte(proxyHAProxyConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	startIn(t, topo, topo.Real(1), filepath.Join(dir, "nginx.out"), "nginx", "-c", conf, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	hlog := filepath.Join(dir, "haproxy.log")
	startIn(t, topo, topo.Real(1), hlog, "haproxy", "-db", "-f", hconf)
	for _, port := range []int{portNginxProxy, portHAProxyProxy, portNginxPlain} {
		waitListening(t, ctx, topo.Real(1), port)
	}
	lossOnReal(t, topo, 1, 25)
	retransBefore := tcpRetransmits(t, topo)

	const perTarget = 6
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(rand.IntN(256))
	}
	var clients []*proxyClient
	for _, vip := range []netip.Addr{topo.VIP(), topo.VIP6()} {
		for _, port := range []uint16{portNginxProxy, portHAProxyProxy} {
			for range perTarget {
				clients = append(clients, &proxyClient{addr: netip.AddrPortFrom(vip, port)})
			}
		}
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.err = netns.Run(topo.Client(), func() error {
				conn, err := dialVIP(ctx, c.addr.String())
				if err != nil {
					return err
				}
				defer conn.Close()
				c.local = conn.LocalAddr().(*net.TCPAddr).AddrPort()
				return putGet(ctx, conn, c.addr.String(), fmt.Sprintf("/c%d", i), body)
			})
		}()
	}
	wg.Wait()
	for _, c := range clients {
		if c.err != nil {
			t.Errorf("client to %s: %v", c.addr, c.err)
		}
	}
	if t.Failed() {
		return
	}
	if n := tcpRetransmits(t, topo) - retransBefore; n == 0 {
		t.Error("no segment was retransmitted: the loss rules dropped nothing")
	}

	// every connection's two requests, logged with its own address
	nginxLog, _ := os.ReadFile(filepath.Join(dir, "access.log"))
	haLog := waitLogLines(t, hlog, 2*perTarget*2)
	for i, c := range clients {
		log := string(nginxLog)
		if c.addr.Port() == portHAProxyProxy {
			log = haLog
		}
		addr := c.local.Addr().Unmap().String()
		for _, method := range []string{"PUT", "GET"} {
			line := fmt.Sprintf("%s %d %s /c%d ", addr, c.local.Port(), method, i)
			if !strings.Contains(log, line) {
				t.Errorf("%s: no %q in the real's log:\n%s", c.addr, line, log)
			}
		}
	}
}

// waitListening waits until something listens on port in namespace ns.
func waitListening(t *testing.T, ctx context.Context, ns string, port int) {
	t.Helper()
	for {
		out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nothing listens on port %d in %s", port, ns)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitLogLines reads a log until it has n lines (haproxy writes each
// line when the request ends) or two seconds passed.
func waitLogLines(t *testing.T, name string, n int) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), "\n") >= n || time.Now().After(deadline) {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// toaIn returns the client address of a TOA option in a captured frame
// (Ethernet, IPv4 or IPv6, TCP to port), if it has one.
func toaIn(frame []byte, port uint16) (netip.AddrPort, bool) {
	if len(frame) < 14 {
		return netip.AddrPort{}, false
	}
	var l4 []byte
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		if len(frame) < 34 || frame[23] != 6 {
			return netip.AddrPort{}, false
		}
		l4 = frame[14+int(frame[14]&0xf)*4:]
	case 0x86dd:
		if len(frame) < 54 || frame[20] != 6 {
			return netip.AddrPort{}, false
		}
		l4 = frame[54:]
	default:
		return netip.AddrPort{}, false
	}
	if len(l4) < 20 || binary.BigEndian.Uint16(l4[2:]) != port {
		return netip.AddrPort{}, false
	}
	hlen := int(l4[12]>>4) * 4
	if hlen > len(l4) {
		return netip.AddrPort{}, false
	}
	for opt := l4[20:hlen]; len(opt) > 0; {
		switch {
		case opt[0] == 0:
			return netip.AddrPort{}, false
		case opt[0] == 1:
			opt = opt[1:]
			continue
		case len(opt) < 2 || int(opt[1]) < 2 || int(opt[1]) > len(opt):
			return netip.AddrPort{}, false
		}
		if opt[0] == 254 && (opt[1] == 8 || opt[1] == 20) {
			a, _ := netip.AddrFromSlice(opt[4:opt[1]])
			return netip.AddrPortFrom(a, binary.BigEndian.Uint16(opt[2:])), true
		}
		opt = opt[opt[1]:]
	}
	return netip.AddrPort{}, false
}

// TestTOAAtTheReal: with client_address toa, a packet capture at the
// real shows the client's own address and port in option 254 of its
// segments, for IPv4 and IPv6, and the request is answered.
func TestTOAAtTheReal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo := testTopology(t, 1)
	config := strings.ReplaceAll(topo.Config("rr"), "    protocol: tcp\n", "    protocol: tcp\n    client_address: toa\n")
	startLabWith(t, ctx, topo, config)

	for _, vip := range []netip.Addr{topo.VIP(), topo.VIP6()} {
		// capture at the real, from before the connection opens
		frames := captureIn(t, topo.Real(1))
		var local netip.AddrPort
		err := netns.Run(topo.Client(), func() error {
			addr := netip.AddrPortFrom(vip, ServicePort).String()
			conn, err := dialVIP(ctx, addr)
			if err != nil {
				return err
			}
			defer conn.Close()
			local = conn.LocalAddr().(*net.TCPAddr).AddrPort()
			want, sum := patternBytes(4096)
			return transfer(ctx, conn, addr, "upload", want, sum)
		})
		captured := frames()
		if err != nil {
			t.Fatalf("%s: %v", vip, err)
		}
		seen := 0
		for _, f := range captured {
			if got, ok := toaIn(f, ServicePort); ok {
				seen++
				if got.Addr().Unmap() != local.Addr().Unmap() || got.Port() != local.Port() {
					t.Errorf("%s: TOA says %s, the client is %s", vip, got, local)
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s: no segment with a TOA option reached the real (of %d frames captured there)", vip, len(captured))
		}
	}
}

// captureIn captures the frames namespace ns receives and sends (an
// AF_PACKET socket, up to 4096 frames) until the function it returns is
// called, which returns them.
func captureIn(t *testing.T, ns string) func() [][]byte {
	t.Helper()
	var fd int
	err := netns.Run(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
			return err
		}
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		t.Fatalf("capture socket in %s: %v", ns, err)
	}
	stop := make(chan struct{})
	done := make(chan [][]byte)
	go func() {
		var frames [][]byte
		buf := make([]byte, 65536)
		keep := func(n int, err error) bool {
			if err == nil && n > 0 && len(frames) < 4096 {
				frames = append(frames, append([]byte(nil), buf[:n]...))
			}
			return err == nil
		}
		for {
			select {
			case <-stop:
				// a loaded machine may leave frames queued that the
				// loop has not read yet: they were captured too
				for {
					n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
					if !keep(n, err) {
						break
					}
				}
				unix.Close(fd)
				done <- frames
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			keep(n, err)
		}
	}()
	return func() [][]byte {
		close(stop)
		return <-done
	}
}

// htons is for the protocol number of an AF_PACKET socket.
func htons(v uint16) uint16 { return v<<8 | v>>8 }
