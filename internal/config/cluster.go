// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Cluster lists the nodes of a cluster, in a file they all share: each
// node syncs its connections to the others and is the backup of their
// local IPs.
type Cluster struct {
	// SyncPort is the TCP port every node's connection sync listens on
	// at its address (default 8848, IPVS's sync port).
	SyncPort int `yaml:"sync_port,omitempty" json:"sync_port,omitempty"`
	// SyncRefresh is how often, in seconds, a node sends again the
	// connections active since the last time (default 30).
	SyncRefresh int `yaml:"sync_refresh,omitempty" json:"sync_refresh,omitempty"`
	// Nodes are the cluster's nodes; node.name says which one this is.
	Nodes []ClusterNode `yaml:"nodes" json:"nodes"`
}

// ClusterNode is one node of a cluster.
type ClusterNode struct {
	Name string `yaml:"name" json:"name"`
	// ID names the node's connections on the others (1 to 65535;
	// default: its place in the list, from 1). It must not change while
	// connections live.
	ID int `yaml:"id,omitempty" json:"id,omitempty"`
	// Address is where the node's connection sync listens; the others
	// reach it there.
	Address string `yaml:"address" json:"address"`
	// LocalIPs are the node's local IPs (node.local_ips of that node).
	LocalIPs []string `yaml:"local_ips" json:"local_ips"`
}

// Cluster defaults.
const (
	DefaultSyncPort    = 8848
	DefaultSyncRefresh = 30
)

// ClusterSettings is a valid cluster section in the daemon's terms.
type ClusterSettings struct {
	Self        ClusterMember
	Peers       []ClusterMember
	SyncPort    uint16
	SyncRefresh time.Duration
}

// ClusterMember is a valid cluster node.
type ClusterMember struct {
	Name     string
	ID       uint16
	Address  netip.Addr
	LocalIPs []netip.Addr
}

// SyncAddr is where the member's connection sync listens.
func (s ClusterSettings) SyncAddr(m ClusterMember) netip.AddrPort {
	return netip.AddrPortFrom(m.Address, s.SyncPort)
}

// PeerLocalIPs are the other nodes' local IPs.
func (s ClusterSettings) PeerLocalIPs() []netip.Addr {
	var out []netip.Addr
	for _, p := range s.Peers {
		out = append(out, p.LocalIPs...)
	}
	return out
}

func (c *Cluster) clone() *Cluster {
	if c == nil {
		return nil
	}
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	for i := range out.Nodes {
		out.Nodes[i].LocalIPs = slices.Clone(out.Nodes[i].LocalIPs)
	}
	return &out
}

// cluster checks the cluster section against the node section and
// converts it: this node's local IPs become node.local_ips.
func (ch *checker) cluster(c *Cluster, n *Node, d *Desired) {
	if c == nil {
		return
	}
	out := &ClusterSettings{SyncPort: DefaultSyncPort, SyncRefresh: DefaultSyncRefresh * time.Second}
	if c.SyncPort != 0 {
		if p, ok := ch.port("cluster.sync_port", c.SyncPort, "default 8848"); ok && p != 0 {
			out.SyncPort = p
		}
	}
	if c.SyncRefresh < 0 || c.SyncRefresh > 3600 {
		ch.kindf(ErrOutOfRange, "cluster.sync_refresh", "%d is out of range (want 1 to 3600 seconds)", c.SyncRefresh)
	} else if c.SyncRefresh > 0 {
		out.SyncRefresh = time.Duration(c.SyncRefresh) * time.Second
	}
	if len(c.Nodes) < 2 {
		ch.addf("cluster.nodes", "a cluster has two nodes at least (%d given)", len(c.Nodes))
	}
	names, ids, addrs, laddrs := map[string]int{}, map[int]int{}, map[netip.Addr]int{}, map[netip.Addr]string{}
	self := -1
	for i, cn := range c.Nodes {
		path := fmt.Sprintf("cluster.nodes[%d]", i)
		m := ClusterMember{Name: cn.Name}
		if cn.Name == "" {
			ch.addf(path+".name", "a name is required")
		} else if j, dup := names[cn.Name]; dup {
			ch.addf(path+".name", "%q is also the name of cluster.nodes[%d]", cn.Name, j)
		}
		names[cn.Name] = i
		id := cn.ID
		if id == 0 {
			id = i + 1
		}
		if id < 1 || id > 65535 {
			ch.kindf(ErrOutOfRange, path+".id", "%d is out of range (want 1 to 65535)", id)
		} else if j, dup := ids[id]; dup {
			ch.addf(path+".id", "%d is also the id of cluster.nodes[%d]", id, j)
		}
		ids[id] = i
		m.ID = uint16(id)
		if a, err := netip.ParseAddr(cn.Address); err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			ch.addf(path+".address", "%q is not a node's address (want the IP its connection sync listens on)", cn.Address)
		} else if j, dup := addrs[a]; dup {
			ch.addf(path+".address", "%s is also the address of cluster.nodes[%d]", a, j)
		} else {
			addrs[a] = i
			m.Address = a
		}
		for j, s := range cn.LocalIPs {
			lp := fmt.Sprintf("%s.local_ips[%d]", path, j)
			a, ok := ch.addr(lp, s, roleLocalIP)
			if !ok {
				continue
			}
			if other, dup := laddrs[a]; dup {
				ch.addf(lp, "%s is also a local IP of %s: nodes must not share local IPs", a, other)
				continue
			}
			laddrs[a] = cn.Name
			m.LocalIPs = append(m.LocalIPs, a)
		}
		if n != nil && cn.Name == n.Name && n.Name != "" {
			self = i
			out.Self = m
		} else {
			out.Peers = append(out.Peers, m)
		}
	}
	switch {
	case n == nil || n.Name == "":
		ch.addf("node.name", "with a cluster section, node.name says which of cluster.nodes this node is")
	case self < 0:
		ch.addf("node.name", "%q is not the name of any of cluster.nodes", n.Name)
	case len(n.LocalIPs) > 0:
		ch.addf("node.local_ips", "with a cluster section, a node's local IPs are its cluster.nodes[%d].local_ips", self)
	default:
		d.Node.LocalIPs = out.Self.LocalIPs
	}
	d.Cluster = out
}

// clusterChecks refuses what a cluster cannot run, once the services are
// read: a service's own local IPs (every node would use them: each
// node's are in cluster.nodes) and a refresh that lets the peers' copies
// of established and UDP connections expire between two refreshes.
func (ch *checker) clusterChecks(c *Config, d *Desired) {
	if d.Cluster == nil {
		return
	}
	for i, s := range c.Services {
		if len(s.LocalIPs) > 0 {
			ch.addf(fmt.Sprintf("services[%d].local_ips", i), "with a cluster section a service has no local IPs of its own "+
				"(every node would take ports of them): each node's are in cluster.nodes[].local_ips")
		}
	}
	least := d.Settings.StateTimeouts()
	for _, svc := range d.Services {
		least = minTimeouts(least, svc.Timeouts.Or(d.Settings.StateTimeouts()))
	}
	if need := d.Cluster.SyncRefresh + 2*time.Second; least.Established < need || least.UDP < need {
		ch.addf("cluster.sync_refresh", "%v: the peers' copies of a connection are renewed that often, so established and UDP "+
			"timeouts must be longer (they are %v and %v at the least here): lower sync_refresh or raise the timeouts",
			d.Cluster.SyncRefresh, least.Established, least.UDP)
	}
}

func minTimeouts(a, b loadbalancer.StateTimeouts) loadbalancer.StateTimeouts {
	return loadbalancer.StateTimeouts{Established: min(a.Established, b.Established), UDP: min(a.UDP, b.UDP)}
}
