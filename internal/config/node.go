// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node is what is this node's own in a file the nodes of a cluster share:
// every node has the same services and reals, and each its own node
// section.
type Node struct {
	// Name names the node in listings and logs (default: the host name).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// LocalIPs are this node's local IPs: a service that names none of
	// its own uses those of its VIP's family. Nodes must not share them,
	// so that the replies of a connection reach the node that opened it.
	LocalIPs []string `yaml:"local_ips,omitempty" json:"local_ips,omitempty"`
	// ShutdownGrace is how long, in seconds, a stopping daemon keeps
	// forwarding after it withdrew its VIPs, for the routers to move new
	// connections away and established ones to end (default 0: stop at
	// once).
	ShutdownGrace int `yaml:"shutdown_grace,omitempty" json:"shutdown_grace,omitempty"`
	// BGP announces the VIPs and the local IPs to routers.
	BGP *BGP `yaml:"bgp,omitempty" json:"bgp,omitempty"`
}

// BGP is the node's BGP speaker, GoBGP embedded in the daemon. It
// announces each VIP (as a /32 or /128) while a service of the VIP has a
// real taking connections and the node is not drained, and the node's
// local IPs always.
type BGP struct {
	// ASN is the node's AS number.
	ASN uint32 `yaml:"asn" json:"asn"`
	// RouterID is the node's BGP identifier, an IPv4 address.
	RouterID string `yaml:"router_id" json:"router_id"`
	// ListenPort is the port the speaker accepts sessions on (0: it
	// only connects out, the default).
	ListenPort int `yaml:"listen_port,omitempty" json:"listen_port,omitempty"`
	// NextHop is the IPv4 next hop announced (default: the address the
	// session to each peer goes from); NextHopIPv6 the IPv6 one, which
	// IPv6 VIPs need on a session over IPv4.
	NextHop     string `yaml:"next_hop,omitempty" json:"next_hop,omitempty"`
	NextHopIPv6 string `yaml:"next_hop_ipv6,omitempty" json:"next_hop_ipv6,omitempty"`
	// Communities go with every announcement ("65000:100", no-export,
	// no-advertise); a service's bgp_communities add to them for its
	// VIP.
	Communities []string `yaml:"communities,omitempty" json:"communities,omitempty"`
	// GracefulRestart is the restart time, in seconds, announced with
	// the graceful-restart capability (RFC 4724): for that long after a
	// daemon restart or hand-over the routers keep its routes (default
	// 120; -1: no graceful restart).
	GracefulRestart int `yaml:"graceful_restart,omitempty" json:"graceful_restart,omitempty"`
	// Peers are the routers the node announces to.
	Peers []BGPPeer `yaml:"peers" json:"peers"`
}

// BGPPeer is a BGP neighbour of the node.
type BGPPeer struct {
	Address string `yaml:"address" json:"address"`
	ASN     uint32 `yaml:"asn" json:"asn"`
	// Port is the peer's BGP port (default 179).
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// Password signs the session with TCP MD5 (RFC 2385).
	Password string `yaml:"password,omitempty" json:"password,omitempty"`
	// HoldTime in seconds (default 90; 0 or 3 to 65535): how long a
	// silent session lives, so how long the router takes to notice a
	// dead node.
	HoldTime *int `yaml:"hold_time,omitempty" json:"hold_time,omitempty"`
	// Multihop is the TTL of an eBGP session to a peer that is not on a
	// connected network (0: directly connected).
	Multihop int `yaml:"multihop,omitempty" json:"multihop,omitempty"`
}

// Default BGP settings.
const (
	DefaultBGPPort         = 179
	DefaultBGPHoldTime     = 90
	DefaultGracefulRestart = 120
)

// NodeSettings is a valid node section in the daemon's terms.
type NodeSettings struct {
	Name string
	// LocalIPs are the node's local IPs, in the file's order.
	LocalIPs      []netip.Addr
	ShutdownGrace time.Duration
	// BGP is nil without a speaker.
	BGP *BGPSettings
}

// BGPSettings is a valid bgp section.
type BGPSettings struct {
	ASN        uint32
	RouterID   netip.Addr
	ListenPort int // 0: no listener
	// NextHop4 and NextHop6 are the next hops announced; unset: the
	// session's own address.
	NextHop4, NextHop6 netip.Addr
	Communities        []uint32
	// RestartTime is the graceful-restart time; 0: none.
	RestartTime time.Duration
	Peers       []BGPPeerSettings
}

// BGPPeerSettings is a valid peer.
type BGPPeerSettings struct {
	Address     netip.Addr
	ASN         uint32
	Port        uint16
	Password    string
	HoldTime    time.Duration
	MultihopTTL uint8
}

// clone returns a deep copy of n (nil stays nil).
func (n *Node) clone() *Node {
	if n == nil {
		return nil
	}
	out := *n
	out.LocalIPs = slices.Clone(n.LocalIPs)
	if n.BGP != nil {
		b := *n.BGP
		b.Communities = slices.Clone(b.Communities)
		b.Peers = slices.Clone(b.Peers)
		for i, p := range b.Peers {
			if p.HoldTime != nil {
				h := *p.HoldTime
				b.Peers[i].HoldTime = &h
			}
		}
		out.BGP = &b
	}
	return &out
}

// node checks the node section and converts it.
func (ch *checker) node(n *Node) NodeSettings {
	var out NodeSettings
	if n == nil {
		return out
	}
	out.Name = n.Name
	seen := map[netip.Addr]int{}
	for j, s := range n.LocalIPs {
		p := fmt.Sprintf("node.local_ips[%d]", j)
		a, ok := ch.addr(p, s, roleLocalIP)
		if !ok {
			continue
		}
		if k, dup := seen[a]; dup {
			ch.addf(p, "%s is also node.local_ips[%d]", a, k)
			continue
		}
		seen[a] = j
		out.LocalIPs = append(out.LocalIPs, a)
	}
	if n.ShutdownGrace < 0 || n.ShutdownGrace > 3600 {
		ch.kindf(ErrOutOfRange, "node.shutdown_grace", "%d is out of range (want 0 to 3600 seconds)", n.ShutdownGrace)
	}
	out.ShutdownGrace = time.Duration(n.ShutdownGrace) * time.Second
	if n.BGP != nil {
		out.BGP = ch.bgp(n.BGP)
	}
	return out
}

func (ch *checker) bgp(b *BGP) *BGPSettings {
	out := &BGPSettings{ASN: b.ASN, ListenPort: b.ListenPort}
	if b.ASN == 0 || b.ASN == 23456 || b.ASN == 0xffffffff {
		ch.addf("node.bgp.asn", "%d is not an AS number a speaker can have (want 1 to 4294967294, not 23456)", b.ASN)
	}
	if a, err := netip.ParseAddr(b.RouterID); err != nil || !a.Is4() || a.IsUnspecified() {
		ch.addf("node.bgp.router_id", "%q is not a router id (want an IPv4 address other than 0.0.0.0, the node's own by habit)", b.RouterID)
	} else {
		out.RouterID = a
	}
	if b.ListenPort < 0 || b.ListenPort > 65535 {
		ch.kindf(ErrOutOfRange, "node.bgp.listen_port", "%d is out of range (want 1 to 65535, or 0 not to listen)", b.ListenPort)
	}
	out.NextHop4 = ch.nextHop("node.bgp.next_hop", b.NextHop, true)
	out.NextHop6 = ch.nextHop("node.bgp.next_hop_ipv6", b.NextHopIPv6, false)
	out.Communities = ch.communities("node.bgp.communities", b.Communities)
	switch gr := b.GracefulRestart; {
	case gr == 0:
		out.RestartTime = DefaultGracefulRestart * time.Second
	case gr == -1:
	case gr < 1 || gr > 4095: // 12 bits in the capability
		ch.kindf(ErrOutOfRange, "node.bgp.graceful_restart", "%d is out of range (want 1 to 4095 seconds, or -1 for none)", gr)
	default:
		out.RestartTime = time.Duration(gr) * time.Second
	}
	if len(b.Peers) == 0 {
		ch.addf("node.bgp.peers", "at least one peer is required")
	}
	seen := map[netip.Addr]int{}
	for i, p := range b.Peers {
		path := fmt.Sprintf("node.bgp.peers[%d]", i)
		ps := BGPPeerSettings{ASN: p.ASN, Password: p.Password, Port: DefaultBGPPort, HoldTime: DefaultBGPHoldTime * time.Second}
		a, err := netip.ParseAddr(p.Address)
		switch {
		case err != nil || a.Zone() != "":
			ch.addf(path+".address", "%q is not an IP address", p.Address)
		case a.IsUnspecified() || a.IsMulticast():
			ch.addf(path+".address", "%s cannot be a peer", a)
		default:
			if j, dup := seen[a]; dup {
				ch.addf(path+".address", "%s is also node.bgp.peers[%d]", a, j)
			}
			seen[a] = i
			ps.Address = a.Unmap()
		}
		if p.ASN == 0 || p.ASN == 23456 || p.ASN == 0xffffffff {
			ch.addf(path+".asn", "%d is not a peer's AS number (want 1 to 4294967294, not 23456)", p.ASN)
		}
		if p.Port != 0 {
			if port, ok := ch.port(path+".port", p.Port, "default 179"); ok && port != 0 {
				ps.Port = port
			}
		}
		if p.HoldTime != nil {
			h := *p.HoldTime
			if h != 0 && (h < 3 || h > 65535) {
				ch.kindf(ErrOutOfRange, path+".hold_time", "%d is out of range (want 0 or 3 to 65535 seconds, RFC 4271)", h)
			}
			ps.HoldTime = time.Duration(h) * time.Second
		}
		if p.Multihop < 0 || p.Multihop > 255 {
			ch.kindf(ErrOutOfRange, path+".multihop", "%d is out of range (want 1 to 255, or 0 for a directly connected peer)", p.Multihop)
		}
		ps.MultihopTTL = uint8(p.Multihop)
		out.Peers = append(out.Peers, ps)
	}
	return out
}

func (ch *checker) nextHop(path, s string, v4 bool) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil || a.Zone() != "":
		ch.addf(path, "%q is not an IP address", s)
	case a.Is4() != v4:
		ch.addf(path, "%s is not an %s address", a, map[bool]string{true: "IPv4", false: "IPv6"}[v4])
	case a.IsUnspecified() || a.IsMulticast() || a.IsLoopback():
		ch.addf(path, "%s cannot be a next hop", a)
	default:
		return a
	}
	return netip.Addr{}
}

// wellKnownCommunities are the RFC 1997 communities written by name.
var wellKnownCommunities = map[string]uint32{
	"no-export":    0xffffff01,
	"no-advertise": 0xffffff02,
	"blackhole":    0xffff029a, // RFC 7999
}

// communities parses "ASN:VALUE" communities (each half 0 to 65535) and
// the well-known names.
func (ch *checker) communities(path string, list []string) []uint32 {
	var out []uint32
	for i, s := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		if c, ok := wellKnownCommunities[s]; ok {
			out = append(out, c)
			continue
		}
		hi, lo, found := strings.Cut(s, ":")
		a, errA := strconv.ParseUint(hi, 10, 16)
		b, errB := strconv.ParseUint(lo, 10, 16)
		if !found || errA != nil || errB != nil {
			ch.addf(p, "%q is not a community (want ASN:VALUE, each 0 to 65535, or no-export, no-advertise, blackhole)", s)
			continue
		}
		out = append(out, uint32(a)<<16|uint32(b))
	}
	return out
}

// nodeLocalIPs gives each service without local IPs of its own the
// node's of its VIP's family, and checks the node's against the VIPs
// and the host.
func (ch *checker) nodeLocalIPs(d *Desired, vips map[netip.Addr]int, owns func(netip.Addr) bool) {
	for j, a := range d.Node.LocalIPs {
		if i, ok := vips[a]; ok {
			ch.kindf(ErrAddressIsVIP, fmt.Sprintf("node.local_ips[%d]", j), "%s is the VIP of services[%d], so it cannot also be a local IP", a, i)
		}
		if owns != nil && owns(a) {
			ch.kindf(ErrHostAddress, fmt.Sprintf("node.local_ips[%d]", j),
				"%s is an address this host already has; use addresses only xlb uses", a)
		}
	}
	for i := range d.Services {
		svc := &d.Services[i]
		if len(svc.LocalIPs) > 0 {
			continue
		}
		for _, a := range d.Node.LocalIPs {
			if a.Is4() == svc.Key.VIP.Is4() {
				svc.LocalIPs = append(svc.LocalIPs, a)
			}
		}
	}
}

// vipCommunities adds the communities of a service (and the node's) to
// its VIP's.
func (ch *checker) vipCommunities(path string, s *Service, vip netip.Addr, d *Desired) {
	own := ch.communities(path+".bgp_communities", s.BGPCommunities)
	if d.Communities == nil {
		d.Communities = map[netip.Addr][]uint32{}
	}
	cur, seen := d.Communities[vip]
	if !seen && d.Node.BGP != nil {
		cur = slices.Clone(d.Node.BGP.Communities)
	}
	for _, c := range own {
		if !slices.Contains(cur, c) {
			cur = append(cur, c)
		}
	}
	d.Communities[vip] = cur
}

// bgpFamilies refuses a VIP no BGP session can carry: an IPv6 VIP with
// IPv4 peers only and no next_hop_ipv6 (the session cannot name an IPv6
// next hop of its own), and the reverse.
func (ch *checker) bgpFamilies(d *Desired) {
	b := d.Node.BGP
	if b == nil {
		return
	}
	has := map[bool]bool{} // by Is4
	for _, p := range b.Peers {
		has[p.Address.Is4()] = true
	}
	carries := func(v4 bool) bool {
		if v4 {
			return has[true] || b.NextHop4.IsValid()
		}
		return has[false] || b.NextHop6.IsValid()
	}
	for i, svc := range d.Services {
		if v4 := svc.Key.VIP.Is4(); !carries(v4) {
			want := "an IPv6 peer or node.bgp.next_hop_ipv6"
			if v4 {
				want = "an IPv4 peer or node.bgp.next_hop"
			}
			ch.addf(fmt.Sprintf("services[%d].vip", i), "%s cannot be announced: no BGP session carries its family (want %s)", svc.Key.VIP, want)
		}
	}
}
