// SPDX-License-Identifier: Apache-2.0

// Package cluster is the lab of several xlb nodes behind a router: a
// client, a router namespace running FRR (zebra and bgpd) that spreads
// the VIP over the nodes with ECMP, the nodes, and the reals on one
// segment behind the router.
//
//	client 10.N.1.2 --c0--rc-- router 10.N.1.1 (AS 65000)
//	                             |rn1 10.N.21.1 -- n0 10.N.21.2 node1 (AS 65001, local IP 10.N.2.11)
//	                             |rn2 10.N.22.1 -- n0 10.N.22.2 node2 (AS 65001, local IP 10.N.2.12)
//	                             |...
//	                             |rr 10.N.10.1 -- bridge (<name>-sw) -- real1 10.N.10.11, real2 ...
//
// Each node has one interface (one-arm): the VIP's packets come from the
// router and leave to it again, rewritten from the node's local IP to a
// real. The router reaches the VIP through every node that announces it
// (an ECMP route, hashed on the 5-tuple: fib_multipath_hash_policy=1)
// and each local IP through the node that announces it, so a real's
// reply, sent to its default gateway, the router, comes back to the node
// that opened the connection.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Cluster names a cluster lab and sizes it. Its reals are a bridged
// topo.Topology's: same names and addresses, behind the router.
type Cluster struct {
	topo.Topology
	Nodes int
}

// AS numbers of the lab: the router's and the nodes' (one AS for all
// nodes, so that their paths are equal and the router spreads over them).
const (
	RouterASN = 65000
	NodeASN   = 65001
)

// New returns the cluster named name on 10.net.0.0/16 with nodes nodes and
// reals reals.
func New(name string, net uint8, nodes, reals int) Cluster {
	return Cluster{Topology: topo.Topology{Name: name, Net: net, Reals: reals, Bridge: true}, Nodes: nodes}
}

func (c Cluster) validate() error {
	if c.Nodes < 1 || c.Nodes > 8 {
		return fmt.Errorf("nodes %d: want 1 to 8", c.Nodes)
	}
	if !c.Bridge {
		return errors.New("a cluster's reals are bridged")
	}
	return nil
}

func (c Cluster) addr(x, y int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, c.Net, byte(x), byte(y)})
}

// Router and Node name the namespaces (Client, Real and Switch are the
// topology's).
func (c Cluster) Router() string    { return c.Name + "-router" }
func (c Cluster) Node(i int) string { return fmt.Sprintf("%s-node%d", c.Name, i) }

// NodeNS returns the namespace of a node named as `xlb lab exec` takes
// it: client, router, nodeN or realN.
func (c Cluster) NodeNS(name string) (string, error) {
	switch name {
	case "client":
		return c.Client(), nil
	case "router":
		return c.Router(), nil
	}
	for i := 1; i <= c.Nodes; i++ {
		if name == fmt.Sprintf("node%d", i) {
			return c.Node(i), nil
		}
	}
	for i := 1; i <= c.Reals; i++ {
		if name == fmt.Sprintf("real%d", i) {
			return c.Real(i), nil
		}
	}
	return "", fmt.Errorf("node %q: want client, router, node1..node%d or real1..real%d", name, c.Nodes, c.Reals)
}

// RouterAddr is the router's address on the client's link.
func (c Cluster) RouterAddr() netip.Addr { return c.addr(1, 1) }

// NodeAddr is node i's address on its link to the router (1-based);
// NodeGateway the router's end.
func (c Cluster) NodeAddr(i int) netip.Addr    { return c.addr(20+i, 2) }
func (c Cluster) NodeGateway(i int) netip.Addr { return c.addr(20+i, 1) }

// NodeLocalIP is node i's local IP.
func (c Cluster) NodeLocalIP(i int) netip.Addr { return c.addr(2, 10+i) }

// NodeIndex is the node whose local IP a is, or 0.
func (c Cluster) NodeIndex(a netip.Addr) int {
	for i := 1; i <= c.Nodes; i++ {
		if c.NodeLocalIP(i) == a {
			return i
		}
	}
	return 0
}

// Namespaces lists every namespace of the cluster.
func (c Cluster) Namespaces() []string {
	out := []string{c.Client(), c.Router(), c.Switch()}
	for i := 1; i <= c.Reals; i++ {
		out = append(out, c.Real(i))
	}
	for i := 1; i <= c.Nodes; i++ {
		out = append(out, c.Node(i))
	}
	return out
}

// Up builds the cluster's namespaces and links and starts the router's
// FRR; the nodes' daemons are StartNode's. On failure it removes what it
// built.
func (c Cluster) Up() (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.Down()
		}
	}()
	if err := netns.Create(c.Name, []string{c.guard()}, c.Namespaces()); err != nil {
		return err
	}
	if err := c.save(); err != nil {
		return err
	}
	// the router forwards and hashes ECMP on the 5-tuple; the nodes
	// forward, as the operator guide asks of every balancer host
	if err := netns.Sysctl(c.Router(), "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1"); err != nil {
		return err
	}
	if err := c.link(c.Client(), "c0", c.ClientAddr(), "rc", c.RouterAddr()); err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		if err := netns.Sysctl(c.Node(i), "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"); err != nil {
			return err
		}
		if err := c.link(c.Node(i), "n0", c.NodeAddr(i), "rn"+strconv.Itoa(i), c.NodeGateway(i)); err != nil {
			return err
		}
		// the router's end receives what the node's XDP program sends
		// back out of n0: GRO on, as on every veth peer xlb redirects into
		if err := ethtoolGRO(c.Router(), "rn"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	if err := c.BridgeTo(c.Router(), "rr"); err != nil {
		return err
	}
	return c.startRouter()
}

// guard is the lab's prefix, blackholed in the host's namespace while
// the lab is up.
func (c Cluster) guard() string { return fmt.Sprintf("10.%d.0.0/16", c.Net) }

// link joins ns to the router with a /24: ns's end nsIf with addr and a
// default route through the router's end routerIf with gw.
func (c Cluster) link(ns, nsIf string, addr netip.Addr, routerIf string, gw netip.Addr) error {
	for _, cmd := range [][]string{
		{"link", "add", nsIf, "netns", ns, "type", "veth", "peer", "name", routerIf, "netns", c.Router()},
		{"-n", ns, "addr", "add", addr.String() + "/24", "dev", nsIf},
		{"-n", c.Router(), "addr", "add", gw.String() + "/24", "dev", routerIf},
		{"-n", ns, "link", "set", nsIf, "up"},
		{"-n", c.Router(), "link", "set", routerIf, "up"},
		{"-n", ns, "route", "add", "default", "via", gw.String()},
	} {
		if err := netns.IP(cmd...); err != nil {
			return err
		}
	}
	return nil
}

func ethtoolGRO(ns, ifname string) error {
	if out, err := exec.Command("ip", "netns", "exec", ns, "ethtool", "-K", ifname, "gro", "on").CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool -K %s gro on in %s: %w: %s", ifname, ns, err, out)
	}
	return nil
}

// Down removes every namespace of the cluster, and so its links and the
// processes in them (FRR, daemons, servers); it reports only namespaces
// that exist and could not be removed.
func (c Cluster) Down() error {
	// KILL: a daemon is not to withdraw or clean up after itself here,
	// its pins go below
	err := netns.Destroy([]string{c.guard()}, c.Namespaces(), "KILL")
	for i := 1; i <= c.Nodes; i++ {
		_ = os.RemoveAll(c.pins(i))
	}
	_ = os.RemoveAll(c.Dir())
	return err
}

const clusterFile = "cluster.json"

func (c Cluster) save() error {
	if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	b, _ := json.Marshal(c)
	return os.WriteFile(filepath.Join(c.Dir(), clusterFile), b, 0o600)
}

// Saved returns the cluster lab named name that is up, as Up recorded
// it; ok is false when there is none.
func Saved(name string) (c Cluster, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(topo.Topology{Name: name}.Dir(), clusterFile))
	if errors.Is(err, os.ErrNotExist) {
		return Cluster{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Name != name {
		return Cluster{}, false, fmt.Errorf("cluster lab %s record: corrupt (%v)", name, err)
	}
	return c, true, nil
}
