// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const nodeBase = `interfaces: [eth0]
node:
  local_ips: [10.0.2.11]
  bgp:
    asn: 65001
    router_id: 10.0.21.2
    peers: [{address: 10.0.21.1, asn: 65000}]
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, reals: [{address: 10.0.10.11, port: 80}]}
`

// TestNodeSection checks each field's refusal, with its path.
func TestNodeSection(t *testing.T) {
	refusals(t, nodeBase, []refusal{
		{"asn: 65001", "asn: 0", "node.bgp.asn: 0 is not an AS number"},
		{"asn: 65001", "asn: 23456", "node.bgp.asn: 23456 is not an AS number"},
		{"router_id: 10.0.21.2", "router_id: 2001:db8::1", `node.bgp.router_id: "2001:db8::1" is not a router id`},
		{"peers: [{address: 10.0.21.1, asn: 65000}]", "peers: []", "node.bgp.peers: at least one peer is required"},
		{"{address: 10.0.21.1, asn: 65000}", "{address: 10.0.21.1, asn: 65000}, {address: 10.0.21.1, asn: 65002}", "node.bgp.peers[1].address: 10.0.21.1 is also node.bgp.peers[0]"},
		{"{address: 10.0.21.1, asn: 65000}", "{address: 10.0.21.1, asn: 65000, hold_time: 2}", "node.bgp.peers[0].hold_time: 2 is out of range"},
		{"{address: 10.0.21.1, asn: 65000}", "{address: 10.0.21.1, asn: 65000, multihop: 256}", "node.bgp.peers[0].multihop: 256 is out of range"},
		{"{address: 10.0.21.1, asn: 65000}", "{address: nope, asn: 65000}", `node.bgp.peers[0].address: "nope" is not an IP address`},
		{"asn: 65001\n", "asn: 65001\n    communities: [\"65536:1\"]\n", `node.bgp.communities[0]: "65536:1" is not a community`},
		{"asn: 65001\n", "asn: 65001\n    next_hop: 2001:db8::1\n", "node.bgp.next_hop: 2001:db8::1 is not an IPv4 address"},
		{"asn: 65001\n", "asn: 65001\n    graceful_restart: 5000\n", "node.bgp.graceful_restart: 5000 is out of range"},
		{"local_ips: [10.0.2.11]", "local_ips: [10.0.2.11, 10.0.2.11]", "node.local_ips[1]: 10.0.2.11 is also node.local_ips[0]"},
		{"local_ips: [10.0.2.11]", "local_ips: [192.0.2.10]", "node.local_ips[0]: 192.0.2.10 is the VIP of services[0]"},
		{"local_ips: [10.0.2.11]", "local_ips: [10.0.2.11]\n  shutdown_grace: -1", "node.shutdown_grace: -1 is out of range"},
		{"protocol: tcp,", `protocol: tcp, bgp_communities: ["x"],`, `services[0].bgp_communities[0]: "x" is not a community`},
		{"vip: 192.0.2.10, port: 80, protocol: tcp, reals: [{address: 10.0.10.11, port: 80}]",
			"vip: 2001:db8::10, port: 80, protocol: tcp, reals: [{address: 2001:db8:10::11, port: 80}]",
			"services[0].vip: 2001:db8::10 cannot be announced: no BGP session carries its family (want an IPv6 peer or node.bgp.next_hop_ipv6)"},
	})
}

// refusal is an edit of a valid document and the problem it makes.
type refusal struct{ from, to, want string }

// refusals checks that each edit of base is refused with its problem.
func refusals(t *testing.T, base string, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			doc := strings.Replace(base, tc.from, tc.to, 1)
			if doc == base {
				t.Fatal("the edit changed nothing")
			}
			c, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNodeDefaults: the defaults filled in, communities written by name.
func TestNodeDefaults(t *testing.T) {
	doc := strings.Replace(nodeBase, "asn: 65001\n", "asn: 65001\n    communities: [no-export, \"65000:7\"]\n", 1)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Desired()
	if err != nil {
		t.Fatal(err)
	}
	b := d.Node.BGP
	if b.RestartTime != 120*time.Second || b.Peers[0].Port != 179 || b.Peers[0].HoldTime != 90*time.Second {
		t.Errorf("defaults: %+v", b)
	}
	if got := d.Communities[d.Services[0].Key.VIP]; len(got) != 2 || got[0] != 0xffffff01 || got[1] != 65000<<16|7 {
		t.Errorf("communities %x", got)
	}
	if c2 := c.Clone(); c2.Node == c.Node || c2.Node.BGP == c.Node.BGP {
		t.Error("Clone shares the node section")
	}
}

const clusterBase = `interfaces: [eth0]
cluster:
  nodes:
    - {name: n1, address: 10.0.21.2, local_ips: [10.0.2.11]}
    - {name: n2, address: 10.0.22.2, local_ips: [10.0.2.12]}
node:
  name: n1
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, reals: [{address: 10.0.10.11, port: 80}]}
`

// TestClusterSection checks the cluster section's refusals and what it
// gives the node.
func TestClusterSection(t *testing.T) {
	refusals(t, clusterBase, []refusal{
		{"  name: n1\n", "  name: n9\n", `node.name: "n9" is not the name of any of cluster.nodes`},
		{"node:\n  name: n1\n", "node:\n  shutdown_grace: 1\n", "node.name: with a cluster section, node.name says which"},
		{"  name: n1\n", "  name: n1\n  local_ips: [10.0.2.99]\n", "node.local_ips: with a cluster section"},
		{"{name: n2, address: 10.0.22.2", "{name: n1, address: 10.0.22.2", `cluster.nodes[1].name: "n1" is also the name of cluster.nodes[0]`},
		{"address: 10.0.22.2", "address: 10.0.21.2", "cluster.nodes[1].address: 10.0.21.2 is also the address of cluster.nodes[0]"},
		{"local_ips: [10.0.2.12]", "local_ips: [10.0.2.11]", "cluster.nodes[1].local_ips[0]: 10.0.2.11 is also a local IP of n1"},
		{"{name: n2, address: 10.0.22.2", "{name: n2, id: 1, address: 10.0.22.2", "cluster.nodes[1].id: 1 is also the id of cluster.nodes[0]"},
		{"{name: n2, address: 10.0.22.2", "{name: n2, id: 70000, address: 10.0.22.2", "cluster.nodes[1].id: 70000 is out of range"},
		{"    - {name: n2, address: 10.0.22.2, local_ips: [10.0.2.12]}\n", "", "cluster.nodes: a cluster has two nodes at least"},
		{"cluster:\n", "cluster:\n  sync_port: 70000\n", "cluster.sync_port: 70000 is not a port"},
		{"address: 10.0.22.2", "address: nope", `cluster.nodes[1].address: "nope" is not a node's address`},
		{"protocol: tcp,", "protocol: tcp, local_ips: [10.0.2.99],", "services[0].local_ips: with a cluster section a service has no local IPs of its own"},
		{"cluster:\n", "cluster:\n  sync_refresh: 600\n", "cluster.sync_refresh: 10m0s: the peers' copies"},
		{"protocol: tcp,", "protocol: tcp, timeouts: {udp: 20},", "timeouts must be longer (they are 15m0s and 20s"},
	})
	c, err := Parse([]byte(clusterBase))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Desired()
	if err != nil {
		t.Fatal(err)
	}
	cl := d.Cluster
	if cl.Self.Name != "n1" || cl.Self.ID != 1 || len(cl.Peers) != 1 || cl.Peers[0].ID != 2 || cl.SyncPort != 8848 ||
		cl.SyncRefresh != 30*time.Second || fmt.Sprint(d.Services[0].LocalIPs) != "[10.0.2.11]" || fmt.Sprint(cl.PeerLocalIPs()) != "[10.0.2.12]" {
		t.Errorf("cluster settings %+v, service local IPs %v", cl, d.Services[0].LocalIPs)
	}
	if c2 := c.Clone(); c2.Cluster == c.Cluster || &c2.Cluster.Nodes[0] == &c.Cluster.Nodes[0] {
		t.Error("Clone shares the cluster section")
	}
}
