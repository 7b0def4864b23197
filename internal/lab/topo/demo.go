// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/listing"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// ServicePort is the port of the demo's TCP (HTTP) and UDP services, on
// the VIP and on every real.
const ServicePort = 80

// DemoOptions configure Demo.
type DemoOptions struct {
	Topology Topology
	Requests int    // HTTP requests and UDP datagrams each (default 12)
	Self     string // path of the xlb binary: the daemon, and each real's server
	Mode     loadbalancer.AttachMode
}

// Demo builds the lab, runs the xlb daemon in the balancer with TCP and
// UDP FullNAT services on the VIP and a TCP one on the IPv6 VIP, sends
// requests from the client, prints which real answered each and the
// ipvsadm-style listing, and removes the lab whatever happens.
func Demo(ctx context.Context, w io.Writer, o DemoOptions) (answers []Answer, err error) {
	t := o.Topology
	if o.Requests <= 0 {
		o.Requests = 12
	}
	fmt.Fprintf(w, "building lab %s: client, lb, %d reals\n", t.Name, t.Reals)
	if err := t.Up(); err != nil {
		return nil, err
	}
	defer func() {
		if derr := t.Down(); derr != nil && err == nil {
			err = derr
		}
		fmt.Fprintf(w, "lab %s removed\n", t.Name)
	}()

	srvs, err := t.StartServers(XLBServe(o.Self), false)
	if err != nil {
		return nil, err
	}
	defer srvs.Stop()

	if err := t.WriteConfig(t.Config("rr")); err != nil {
		return nil, err
	}
	var extra []string
	if o.Mode == loadbalancer.ModeGeneric {
		extra = append(extra, "--xdp-mode", "generic")
	}
	d, err := t.StartDaemon(ctx, o.Self, extra...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := d.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	fmt.Fprintf(w, "xlb daemon running in %s on %s: tcp+udp %s:%d and tcp [%s]:%d, rr over %d reals, local IPs %s, %s\n\n",
		t.LB(), strings.Join(t.LBInterfaces(), ","), t.VIP(), ServicePort, t.VIP6(), ServicePort, t.Reals, t.LocalIP(), t.LocalIP6())

	if err := waitServers(ctx, t); err != nil {
		return nil, err
	}
	if answers, err = clientRequests(ctx, w, t, o.Requests); err != nil {
		st, _ := d.Client().Stats(ctx)
		return answers, fmt.Errorf("%w (xlb verdicts so far: %v; drops: %v)", err, st.Verdicts, nonZero(st.Drops))
	}
	svcs, err := d.Client().Services(ctx)
	if err != nil {
		return answers, err
	}
	fmt.Fprintln(w, "\nxlb list -n --stats")
	return answers, listing.Write(w, svcs, listing.Options{Stats: true})
}

// waitServers waits until every real answers HTTP, asked inside the
// real's own namespace: the balancer never talks to a real before xlb
// does, as on a host that has just booted.
func waitServers(ctx context.Context, t Topology) error {
	for i := 1; i <= t.Reals; i++ {
		addr := netip.AddrPortFrom(t.RealAddr(i), ServicePort).String()
		deadline := time.Now().Add(10 * time.Second)
		for netns.Run(t.Real(i), func() error { _, err := httpGet(ctx, addr); return err }) != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("real%d does not answer on %s", i, addr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// httpGet fetches http://addr/ on a new connection. The socket is made by
// the calling goroutine, so on the thread netns.Run locked into a lab
// namespace (http.Client would dial from goroutines of its own, in the
// host's namespace).
func httpGet(ctx context.Context, addr string) (string, error) {
	return httpGetWithin(ctx, addr, 3*time.Second)
}

// httpGetWithin is httpGet with a connection timeout of its own.
func httpGetWithin(ctx context.Context, addr string, connect time.Duration) (string, error) {
	d := net.Dialer{Timeout: connect}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s %q", addr, resp.Status, b)
	}
	return strings.TrimSpace(string(b)), err
}

func udpAsk(addr string, msg string) (string, error) {
	conn, err := net.DialTimeout("udp", addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	return string(buf[:n]), err
}

// Answer is one reply the client got through the balancer.
type Answer struct {
	Proto string // "tcp" or "udp"
	Real  string // the real's name, e.g. "real2"
	Peer  string // the address:port the real saw the request from
}

// clientRequests sends the HTTP requests and UDP datagrams from the
// client, prints which real answered each and returns the answers.
func clientRequests(ctx context.Context, w io.Writer, t Topology, n int) ([]Answer, error) {
	vip := netip.AddrPortFrom(t.VIP(), ServicePort).String()
	var answers []Answer
	err := netns.Run(t.Client(), func() error {
		for i := 1; i <= n; i++ {
			body, err := httpGet(ctx, vip)
			if err != nil {
				return fmt.Errorf("http request %d to %s: %w", i, vip, err)
			}
			fmt.Fprintf(w, "tcp request %2d -> answered by %s (the peer it saw)\n", i, body)
			answers = append(answers, parseAnswer("tcp", body))
		}
		vip6 := netip.AddrPortFrom(t.VIP6(), ServicePort).String()
		for i := 1; i <= n; i++ {
			body, err := httpGet(ctx, vip6)
			if err != nil {
				return fmt.Errorf("http request %d to %s: %w", i, vip6, err)
			}
			fmt.Fprintf(w, "tcp6 request %2d -> answered by %s\n", i, body)
			answers = append(answers, parseAnswer("tcp6", body))
		}
		for i := 1; i <= n; i++ {
			body, err := udpAsk(vip, fmt.Sprintf("ping%d", i))
			if err != nil {
				return fmt.Errorf("udp datagram %d to %s: %w", i, vip, err)
			}
			fmt.Fprintf(w, "udp datagram %2d -> answered by %s\n", i, body)
			answers = append(answers, parseAnswer("udp", body))
		}
		return nil
	})
	return answers, err
}

func parseAnswer(proto, body string) Answer {
	f := strings.Fields(body)
	a := Answer{Proto: proto}
	if len(f) >= 2 {
		a.Real, a.Peer = f[0], f[1]
	}
	return a
}

func nonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// HTTPGet fetches http://addr/ on a new connection from the calling
// goroutine's network namespace (see httpGet), for the other labs.
func HTTPGet(ctx context.Context, addr string) (string, error) { return httpGet(ctx, addr) }

// UDPAsk sends msg to addr and returns the answer.
func UDPAsk(addr, msg string) (string, error) { return udpAsk(addr, msg) }

// ParseAnswer reads a real's answer: its name and the peer it saw.
func ParseAnswer(proto, body string) Answer { return parseAnswer(proto, body) }

// WaitServers waits until every real's server answers.
func (t Topology) WaitServers(ctx context.Context) error { return waitServers(ctx, t) }

// HTTPGetWithin is HTTPGet with a connection timeout of its own.
func HTTPGetWithin(ctx context.Context, addr string, connect time.Duration) (string, error) {
	return httpGetWithin(ctx, addr, connect)
}
