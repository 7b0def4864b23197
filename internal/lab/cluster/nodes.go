// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// NodeOptions shape a node's configuration.
type NodeOptions struct {
	// ShutdownGrace is node.shutdown_grace in seconds.
	ShutdownGrace int
	// HealthCheck adds a TCP health check to both services.
	HealthCheck bool
	// Reals are the reals the services have, 1-based (default: all).
	Reals []int
	// NoSync leaves the cluster section out: each node has its own
	// local IP and syncs nothing (what sync costs is the difference).
	NoSync bool
}

// VIP is the cluster's VIP; its services are TCP and UDP on
// topo.ServicePort with Maglev hashing, so that every node picks the same
// real for a flow.
func (c Cluster) VIP() netip.Addr { return c.addr(0, 10) }

// NodeConfig is node i's configuration: the cluster and the services
// every node shares, and its node section (its name, its router).
func (c Cluster) NodeConfig(i int, o NodeOptions) string {
	reals := o.Reals
	if reals == nil {
		for j := 1; j <= c.Reals; j++ {
			reals = append(reals, j)
		}
	}
	var b strings.Builder
	b.WriteString("interfaces: [n0]\n")
	if c.Nodes == 1 || o.NoSync {
		fmt.Fprintf(&b, "node:\n  name: node%d\n  local_ips: [%s]\n", i, c.NodeLocalIP(i))
	} else {
		// every node's local IP and connection sync, the same on every node
		b.WriteString("cluster:\n  nodes:\n")
		for j := 1; j <= c.Nodes; j++ {
			fmt.Fprintf(&b, "    - {name: node%d, address: %s, local_ips: [%s]}\n", j, c.NodeAddr(j), c.NodeLocalIP(j))
		}
		fmt.Fprintf(&b, "node:\n  name: node%d\n", i)
	}
	if o.ShutdownGrace > 0 {
		fmt.Fprintf(&b, "  shutdown_grace: %d\n", o.ShutdownGrace)
	}
	fmt.Fprintf(&b, "  bgp:\n    asn: %d\n    router_id: %s\n    peers:\n      - {address: %s, asn: %d, hold_time: %d}\n",
		NodeASN, c.NodeAddr(i), c.NodeGateway(i), RouterASN, routerHold)
	b.WriteString("services:\n")
	for _, proto := range []string{"tcp", "udp"} {
		fmt.Fprintf(&b, "  - {vip: %s, port: %d, protocol: %s, scheduler: mh", c.VIP(), topo.ServicePort, proto)
		if o.HealthCheck {
			b.WriteString(", health_check: {type: tcp, interval: 0.2, timeout: 0.15, rise: 1, fall: 2}")
		}
		b.WriteString(",\n     reals: [")
		for k, j := range reals {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{address: %s, port: %d}", c.RealAddr(j), topo.ServicePort)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// NodeFiles are node i's configuration file, API socket and pin path.
func (c Cluster) NodeFiles(i int) (config, socket, pins string) {
	dir := c.Dir()
	return filepath.Join(dir, fmt.Sprintf("node%d.yaml", i)), filepath.Join(dir, fmt.Sprintf("node%d.sock", i)), c.pins(i)
}

func (c Cluster) pins(i int) string { return fmt.Sprintf("/sys/fs/bpf/xlb-lab-%s-node%d", c.Name, i) }

// WriteNodeConfig writes node i's configuration file.
func (c Cluster) WriteNodeConfig(i int, yaml string) error {
	cfg, _, _ := c.NodeFiles(i)
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		return err
	}
	return os.WriteFile(cfg, []byte(yaml), 0o600)
}

// StartNode runs the daemon of node i (`self daemon`) with its written
// configuration and waits until its API answers.
func (c Cluster) StartNode(ctx context.Context, self string, i int, extra ...string) (*topo.Daemon, error) {
	cfg, sock, pins := c.NodeFiles(i)
	return topo.StartDaemonIn(ctx, c.Node(i), self, cfg, sock, pins, extra...)
}

// StartNodes writes every node's configuration with o and starts its
// daemon; on failure it stops those it started.
func (c Cluster) StartNodes(ctx context.Context, self string, o NodeOptions) ([]*topo.Daemon, error) {
	var ds []*topo.Daemon
	for i := 1; i <= c.Nodes; i++ {
		d, err := c.startNode(ctx, self, i, o)
		if err != nil {
			for _, d := range ds {
				_ = d.Stop()
			}
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func (c Cluster) startNode(ctx context.Context, self string, i int, o NodeOptions) (*topo.Daemon, error) {
	if err := c.WriteNodeConfig(i, c.NodeConfig(i, o)); err != nil {
		return nil, err
	}
	return c.StartNode(ctx, self, i)
}

// NodeAddrs are the addresses of nodes (1-based), the next hops the
// router uses for them.
func (c Cluster) NodeAddrs(nodes ...int) []netip.Addr {
	var out []netip.Addr
	for _, i := range nodes {
		out = append(out, c.NodeAddr(i))
	}
	return out
}

// AllNodes is 1..Nodes.
func (c Cluster) AllNodes() []int {
	out := make([]int, c.Nodes)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// AwaitVIP waits until the router spreads the VIP over exactly nodes.
func (c Cluster) AwaitVIP(nodes []int, limit time.Duration) error {
	_, err := c.AwaitNextHops(netip.PrefixFrom(c.VIP(), 32), c.NodeAddrs(nodes...), limit)
	return err
}

// Silence makes node i silent at the router, as a node whose machine
// dies without its link going down: the router drops everything from
// and to it, and notices only when the BGP hold time passes.
func (c Cluster) Silence(i int) error {
	dev := fmt.Sprintf("rn%d", i)
	rules := fmt.Sprintf(`table inet xlb_lab_dead_%d {
  chain cin { type filter hook input priority 0; iifname %q drop; }
  chain cout { type filter hook output priority 0; oifname %q drop; }
  chain cfwd { type filter hook forward priority 0; iifname %q drop; oifname %q drop; }
}
`, i, dev, dev, dev, dev)
	cmd := exec.Command("ip", "netns", "exec", c.Router(), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("silence node%d at the router: %w: %s", i, err, out)
	}
	return nil
}
