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
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// narrowPathMTU is the path MTU toward the reals and toward the client in
// TestPathMTU, below the 1500 of every link.
const narrowPathMTU = 1300

// routeMTU gives the balancer's route to prefix (on dev) an MTU: the path
// beyond the link is narrower, as a router sees it.
func routeMTU(t *testing.T, topo Topology, prefix netip.Prefix, dev string) {
	t.Helper()
	args := []string{"-n", topo.LB(), "route", "replace", prefix.String(), "dev", dev, "mtu", "lock", strconv.Itoa(narrowPathMTU)}
	if prefix.Addr().Is6() {
		args = append([]string{"-6"}, append(args, "metric", "256")...) // the kernel's own route
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// httpOn sends one request with body on conn, a connection the caller
// made (and closes), and returns the response body.
func httpOn(ctx context.Context, conn net.Conn, method, addr, path string, body io.Reader, size int64) ([]byte, error) {
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength, req.Close = size, true
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s %q", addr, resp.Status, b)
	}
	return b, err
}

// patternBytes returns size bytes of the servers' stream pattern and
// their byte sum, as the upload handler answers it.
func patternBytes(size int) ([]byte, uint32) {
	want := make([]byte, size)
	_, _ = io.ReadFull(&StreamPattern{}, want)
	var sum uint32
	for _, b := range want {
		sum += uint32(b)
	}
	return want, sum
}

// transfer uploads want (dir "upload") to the server behind addr on
// conn, which answers with the bytes' count and sum, or downloads as many
// bytes of the stream pattern ("download"), and checks what came back.
func transfer(ctx context.Context, conn net.Conn, addr, dir string, want []byte, sum uint32) error {
	size := len(want)
	if dir == "upload" {
		got, err := httpOn(ctx, conn, http.MethodPost, addr, "/upload", bytes.NewReader(want), int64(size))
		if err != nil {
			return err
		}
		if f := strings.Fields(string(got)); len(f) != 3 || f[1] != strconv.Itoa(size) || f[2] != strconv.FormatUint(uint64(sum), 10) {
			return fmt.Errorf("the real answered %q, want %d bytes summing to %d", got, size, sum)
		}
		return nil
	}
	got, err := httpOn(ctx, conn, http.MethodGet, addr, "/stream?bytes="+strconv.Itoa(size), nil, 0)
	if err == nil && !bytes.Equal(got, want) {
		err = fmt.Errorf("%d bytes differ from the %d sent", len(got), size)
	}
	return err
}

// dialVIP connects to addr from the calling goroutine's namespace.
func dialVIP(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", addr)
}

// dfUDPLearnsMTU sends a datagram larger than the path MTU with DF (IPv6
// never fragments on the way) from a connected socket, and waits until
// the kernel has learnt the path MTU from the ICMP error the balancer
// sent back: IP_MTU / IPV6_MTU then says it.
func dfUDPLearnsMTU(addr netip.AddrPort) (int, error) {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	level, discover, do, mtuOpt := unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO, unix.IP_MTU
	if addr.Addr().Is6() {
		level, discover, do, mtuOpt = unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO, unix.IPV6_MTU
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, discover, do) }); err != nil || serr != nil {
		return 0, fmt.Errorf("set DF: %v %v", err, serr)
	}
	mtu := 0
	if err := raw.Control(func(fd uintptr) { mtu, serr = unix.GetsockoptInt(int(fd), level, mtuOpt) }); err != nil || serr != nil {
		return 0, fmt.Errorf("get path MTU: %v %v", err, serr)
	}
	if mtu == narrowPathMTU {
		return 0, fmt.Errorf("the path MTU is %d before any datagram: nothing to learn", mtu)
	}
	for i := 0; i < 20; i++ { // at most 20 datagrams, 2 s
		_, _ = conn.Write(make([]byte, 1400)) // EMSGSIZE once the MTU is learnt
		time.Sleep(100 * time.Millisecond)
		if err := raw.Control(func(fd uintptr) { mtu, serr = unix.GetsockoptInt(int(fd), level, mtuOpt) }); err != nil || serr != nil {
			return 0, fmt.Errorf("get path MTU: %v %v", err, serr)
		}
		if mtu == narrowPathMTU {
			return mtu, nil
		}
	}
	return mtu, nil
}

// TestPathMTU: the path toward the reals and toward the client is
// narrower (1300) than every link (1500), so each side sends segments the
// other side's path cannot take. xlb answers them with ICMP fragmentation
// needed / packet too big carrying 1300 (from the VIP to the client, from
// the local IP to the real), and a 64 KiB upload and download complete
// over IPv4 and IPv6; a DF UDP datagram teaches the client the MTU.
func TestPathMTU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := testTopology(t, 1)
	_, d := startLabWith(t, ctx, topo, withUDP6(topo, topo.Config("rr")))
	for _, p := range []struct {
		addr netip.Addr
		bits int
		dev  string
	}{
		{topo.RealAddr(1), 24, "l1"}, {topo.RealAddr6(1), 64, "l1"},
		{topo.ClientAddr(), 24, "l0"}, {topo.ClientAddr6(), 64, "l0"},
	} {
		routeMTU(t, topo, netip.PrefixFrom(p.addr, p.bits).Masked(), p.dev)
	}

	const size = 64 << 10
	want, sum := patternBytes(size)
	// forget stands for a client (and real) that has learnt no path MTU
	// yet: each transfer below must get its own ICMP errors from xlb
	forget := func(ns string) {
		t.Helper()
		for _, c := range [][]string{{"route", "flush", "cache"}, {"-6", "route", "flush", "cache"}} {
			if out, err := exec.Command("ip", append([]string{"-n", ns}, c...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip -n %s %v: %v: %s", ns, c, err, out)
			}
		}
	}
	icmpSent := func() uint64 {
		t.Helper()
		st, err := d.Client().Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.ICMPTooBigSent
	}
	for _, vip := range []netip.Addr{topo.VIP(), topo.VIP6()} {
		addr := netip.AddrPortFrom(vip, ServicePort).String()
		for _, dir := range []string{"upload", "download"} {
			forget(topo.Client())
			forget(topo.Real(1))
			before := icmpSent()
			err := netns.Run(topo.Client(), func() error {
				conn, err := dialVIP(ctx, addr)
				if err != nil {
					return err
				}
				defer conn.Close()
				return transfer(ctx, conn, addr, dir, want, sum)
			})
			st, serr := d.Client().Stats(ctx)
			if err != nil {
				if serr == nil {
					t.Logf("verdicts %v, drops %v", nonZero(st.Verdicts), nonZero(st.Drops))
				}
				t.Fatalf("%s of %d bytes, %s: %v", dir, size, addr, err)
			}
			// the sender's first segments are too big for the path: the
			// transfer can only have completed through xlb's errors
			if sent := icmpSent() - before; sent == 0 {
				t.Errorf("%s of %d bytes, %s: completed with no ICMP error from xlb", dir, size, addr)
			}
		}
	}

	// UDP: the client forgets what TCP taught it, and must learn the
	// path MTU again from the errors its datagrams get
	forget(topo.Client())
	err := netns.Run(topo.Client(), func() error {
		for _, vip := range []netip.Addr{topo.VIP(), topo.VIP6()} {
			addr := netip.AddrPortFrom(vip, ServicePort)
			mtu, err := dfUDPLearnsMTU(addr)
			if err != nil {
				return fmt.Errorf("DF UDP to %s: %w", addr, err)
			}
			if mtu != narrowPathMTU {
				return fmt.Errorf("DF UDP to %s: the client's path MTU is %d, want %d from the balancer's ICMP error", addr, mtu, narrowPathMTU)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := d.Client().Stats(ctx); err == nil {
		t.Logf("verdicts %v, drops %v, ICMP errors sent %d", nonZero(st.Verdicts), nonZero(st.Drops), st.ICMPTooBigSent)
	}
}
