// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	Cluster  Cluster
	Requests int    // HTTP requests and UDP datagrams
	Self     string // the xlb binary: daemons and servers
}

// Served is one answer the client got, with the node that carried it:
// the node whose local IP the real saw.
type Served struct {
	topo.Answer
	Node int
}

// Demo builds the cluster, starts the reals' servers and a daemon on
// every node, waits until the router spreads the VIP over all of them,
// sends the requests from the client (each from a new source port, so
// ECMP hashes each on its own), prints which node and real answered
// each, and removes the cluster.
func Demo(ctx context.Context, w io.Writer, o DemoOptions) (answers []Served, err error) {
	c := o.Cluster
	if err := c.Up(); err != nil {
		return nil, err
	}
	defer func() {
		if derr := c.Down(); derr != nil && err == nil {
			err = derr
		}
	}()
	if _, err := c.StartServers(topo.XLBServe(o.Self), true); err != nil {
		return nil, err
	}
	if err := c.WaitServers(ctx); err != nil {
		return nil, err
	}
	daemons, err := c.StartNodes(ctx, o.Self, NodeOptions{})
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, d := range daemons {
			_ = d.Stop()
		}
	}()
	fmt.Fprintf(w, "cluster %s: client %s, router %s (FRR, AS %d), %d nodes (AS %d), %d reals\n",
		c.Name, c.ClientAddr(), c.RouterAddr(), RouterASN, c.Nodes, NodeASN, c.Reals)
	if err := c.AwaitVIP(c.AllNodes(), 30*time.Second); err != nil {
		return nil, err
	}
	hops, _ := c.NextHops(netip.PrefixFrom(c.VIP(), 32))
	fmt.Fprintf(w, "router: %s/32 via %s (ECMP, L4 hash)\n", c.VIP(), joinAddrs(hops))
	answers, err = c.Requests(ctx, w, o.Requests)
	if err != nil {
		return nil, err
	}
	perNode, perReal := map[string]int{}, map[string]int{}
	for _, a := range answers {
		perNode[fmt.Sprintf("node%d", a.Node)]++
		perReal[a.Real]++
	}
	fmt.Fprintf(w, "per node: %s\nper real: %s\n", counts(perNode), counts(perReal))
	return answers, nil
}

// Requests sends n HTTP requests and n UDP datagrams to the VIP from the
// client, each from a new source port.
func (c Cluster) Requests(ctx context.Context, w io.Writer, n int) ([]Served, error) {
	vip := netip.AddrPortFrom(c.VIP(), topo.ServicePort).String()
	var out []Served
	err := netns.Run(c.Client(), func() error {
		for i := 1; i <= n; i++ {
			body, err := topo.HTTPGet(ctx, vip)
			if err != nil {
				return fmt.Errorf("http request %d to %s: %w", i, vip, err)
			}
			out = append(out, c.served("tcp", body))
			fmt.Fprintf(w, "tcp request %2d -> node%d, %s\n", i, out[len(out)-1].Node, body)
		}
		for i := 1; i <= n; i++ {
			body, err := topo.UDPAsk(vip, fmt.Sprintf("ping%d", i))
			if err != nil {
				return fmt.Errorf("udp datagram %d to %s: %w", i, vip, err)
			}
			out = append(out, c.served("udp", body))
			fmt.Fprintf(w, "udp datagram %2d -> node%d, %s\n", i, out[len(out)-1].Node, body)
		}
		return nil
	})
	return out, err
}

func (c Cluster) served(proto, body string) Served {
	a := topo.ParseAnswer(proto, body)
	s := Served{Answer: a}
	if ap, err := netip.ParseAddrPort(a.Peer); err == nil {
		s.Node = c.NodeIndex(ap.Addr())
	}
	return s
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
