// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Backend is what the server serves: the daemon. Its writes take the
// revision the writer read (If-Match; 0 for none) and refuse with a
// *StaleError, changing nothing, when another is in force; they return
// the revision in force after them (see RevisionCounter).
type Backend interface {
	// ConfigRevision returns a copy of the configuration in force and
	// its revision, read together.
	ConfigRevision() (*config.Config, uint64)
	// Apply validates cfg, applies its difference with the configuration
	// in force and returns what changed; on error nothing changed.
	Apply(cfg *config.Config, ifRevision uint64) (config.Changes, uint64, error)
	// Update applies edit to a copy of the configuration in force and
	// then applies the result, both under one lock; when edit fails,
	// nothing changed and its error is returned.
	Update(ifRevision uint64, edit func(cfg *config.Config) error) (config.Changes, uint64, error)
	// Status returns the services with their reals and counters.
	Status() ([]loadbalancer.ServiceStatus, error)
	// Conns returns the connection entries; fn returns false to stop.
	Conns(fn func(loadbalancer.ConnEntry) bool) error
	// Stats returns the data path's global counters.
	Stats() (Stats, error)
	// ZeroCounters zeroes one service's counters and its reals', or
	// every counter when k is nil (ipvsadm -Z).
	ZeroCounters(k *loadbalancer.ServiceKey) error
	// Daemon says what the daemon is: its start, files and interfaces.
	Daemon() DaemonInfo
	// FollowDrops calls fn for every drop the data path samples until
	// ctx ends (the drop recorder is on while someone follows).
	FollowDrops(ctx context.Context, fn func(Drop)) error
	// Node returns the node's name, drain state and BGP speaker.
	Node() NodeStatus
	// Drain withdraws the node's VIPs (true) or announces them again
	// (false); without a BGP speaker it returns ErrNoSpeaker.
	Drain(drained bool) error
}

// Stats are the data path's global counters.
type Stats struct {
	Drops    map[string]uint64 `json:"drops"`
	Verdicts map[string]uint64 `json:"verdicts"`
	// RedirectTxFailed counts redirected frames the target driver
	// refused when the devmap was flushed, and RedirectErrors redirects
	// the kernel refused at once (a veth whose peer has no XDP program
	// and GRO off: the first before kernel 6.3, the second since). Both
	// are lost without a trace in any interface counter; they count from
	// the daemon's start and stay 0 when the monitor could not be opened.
	RedirectTxFailed uint64 `json:"redirect_tx_failed"`
	RedirectErrors   uint64 `json:"redirect_errors"`
	// ICMPTooBigSent counts the ICMP fragmentation-needed and Packet Too
	// Big errors the data path sent for packets above the egress MTU.
	ICMPTooBigSent uint64 `json:"icmp_too_big_sent"`
	// Events counts what the data path did besides forwarding, by name:
	// icmp_too_big, toa_added, toa_no_room, proxy_header_sent,
	// mss_lowered.
	Events map[string]uint64 `json:"events,omitempty"`
	// ConnTables are the IPv4 and IPv6 connection tables' occupancy and
	// losses (conntable.go).
	ConnTables []ConnTable `json:"conn_tables,omitempty"`
	// LocalIPs are the local IPs the data path holds, in address order,
	// with the new connections dropped as no_lport because every port of
	// the local IP they tried was held.
	LocalIPs []LocalIPStats `json:"local_ips,omitempty"`
}

// LocalIPStats are one local IP's port-exhaustion counter (Stats.LocalIPs).
type LocalIPStats struct {
	Address netip.Addr `json:"address"`
	NoLport uint64     `json:"no_lport"`
}

// Counters are packet, byte and connection counters (ipvsadm's columns).
type Counters struct {
	Conns      uint64 `json:"conns"`
	InPackets  uint64 `json:"in_packets"`
	OutPackets uint64 `json:"out_packets"`
	InBytes    uint64 `json:"in_bytes"`
	OutBytes   uint64 `json:"out_bytes"`
}

// Real is a real server as the API shows it.
type Real struct {
	Address netip.Addr `json:"address"`
	Port    uint16     `json:"port"`
	Weight  uint32     `json:"weight"`
	// Health is up or down when the service has a health check, else
	// empty; HealthReason says why the last check failed.
	Health       string `json:"health,omitempty"`
	HealthReason string `json:"health_reason,omitempty"`
	// NextHop is "unresolved" while the real's next hop has no
	// link-layer address (no new connections go to it), else empty;
	// NextHopReason says why.
	NextHop       string   `json:"next_hop,omitempty"`
	NextHopReason string   `json:"next_hop_reason,omitempty"`
	ActiveConns   int      `json:"active_conns"`
	InactiveConns int      `json:"inactive_conns"`
	Stats         Counters `json:"stats"`
}

// Service is a virtual service as the API shows it.
type Service struct {
	Name      string                 `json:"name,omitempty"`
	VIP       netip.Addr             `json:"vip"`
	Port      uint16                 `json:"port"`
	Protocol  loadbalancer.Proto     `json:"protocol"`
	Scheduler loadbalancer.Scheduler `json:"scheduler"`
	Mode      string                 `json:"mode"`
	// Persistent is the persistence timeout in seconds (ipvsadm -p), 0
	// when off; Netmask groups clients for it (ipvsadm -M): dotted for
	// IPv4, a prefix length for IPv6, empty for the whole address.
	Persistent int    `json:"persistent,omitempty"`
	Netmask    string `json:"netmask,omitempty"`
	// ClientAddress is how the reals learn the client's address: toa
	// or proxy-v2; left out for none.
	ClientAddress string `json:"client_address,omitempty"`
	// SynProxy: SYNs are answered with SYN cookies.
	SynProxy bool         `json:"syn_proxy,omitempty"`
	LocalIPs []netip.Addr `json:"local_ips"`
	Stats    Counters     `json:"stats"`
	// NoLport counts new connections dropped as no_lport: every local
	// port tried was held (widen local_port_range or add local IPs).
	NoLport uint64 `json:"no_lport"`
	Reals   []Real `json:"reals"`
}

// Conn is one connection-table entry.
type Conn struct {
	Protocol loadbalancer.Proto     `json:"protocol"`
	From     netip.AddrPort         `json:"from"`
	To       netip.AddrPort         `json:"to"`
	Peer     netip.AddrPort         `json:"peer"`
	Reverse  bool                   `json:"reverse"`
	State    loadbalancer.ConnState `json:"state"`
	IdleSecs float64                `json:"idle_seconds"`
	// TimeoutSecs is how long the entry lives without packets in its
	// state: its service's own timeout or the global one.
	TimeoutSecs float64 `json:"timeout_seconds"`
	// ClientAddress is toa or proxy-v2 for a connection that gives the
	// real the client's address that way (what its service had when it
	// opened); left out for none.
	ClientAddress string `json:"client_address,omitempty"`
	// SynProxy: the connection was opened by the SYN proxy.
	SynProxy bool `json:"syn_proxy,omitempty"`
}

// ApplyResult says what an apply changed, and the revision of the
// configuration in force after it (also sent as the ETag).
type ApplyResult struct {
	Changed bool     `json:"changed"`
	Changes []string `json:"changes"`
	// Warnings are what the operator should know of the apply (a real
	// whose next hop is unresolved); they are not changes.
	Warnings []string `json:"warnings,omitempty"`
	Revision uint64   `json:"revision"`
}

// NextHopUnresolved is Real.NextHop of a real whose next hop is not
// resolved.
const NextHopUnresolved = "unresolved"

// Error is the body of every error response. Revision is the revision in
// force, sent with 412 Precondition Failed (a stale If-Match).
type Error struct {
	Error    string `json:"error"`
	Revision uint64 `json:"revision,omitempty"`
}

// Version is the daemon's version.
type Version struct {
	Version string `json:"version"`
}

// Key is the service's key in the load-balancer model.
func (s Service) Key() loadbalancer.ServiceKey {
	return loadbalancer.ServiceKey{VIP: s.VIP, Port: s.Port, Proto: s.Protocol}
}

// Mask is the service's persistence netmask as ipvsadm shows it: dotted
// for IPv4, a prefix length for IPv6, "" for the whole address. A
// netmask in another form is shown as the daemon sent it.
func (s Service) Mask() string {
	if s.Netmask == "" {
		return ""
	}
	bits, err := config.ParseNetmask(s.Netmask, s.VIP.Is4())
	if err != nil {
		return s.Netmask // not ours to judge: show it as the daemon has it
	}
	return config.FormatNetmask(s.VIP, bits)
}

func countersOf(c loadbalancer.Counters) Counters {
	return Counters{Conns: c.Conns, InPackets: c.InPackets, OutPackets: c.OutPackets, InBytes: c.InBytes, OutBytes: c.OutBytes}
}
