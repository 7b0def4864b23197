// SPDX-License-Identifier: Apache-2.0

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// Config is a parsed, not yet validated, configuration file.
type Config struct {
	// Interfaces are the interfaces XDP is attached to.
	Interfaces []string `yaml:"interfaces" json:"interfaces"`
	// XDPMode is native (the default) or generic.
	XDPMode string `yaml:"xdp_mode,omitempty" json:"xdp_mode,omitempty"`
	// Workers run the balancer on CPUs of their own behind a steering
	// program (loadbalancer.Workers); nil: where frames are received.
	Workers *Workers `yaml:"workers,omitempty" json:"workers,omitempty"`
	// Timeouts override the data path's connection timeouts.
	Timeouts *Timeouts `yaml:"timeouts,omitempty" json:"timeouts,omitempty"`
	// ConnTable sizes the connection tables; without it they have
	// loadbalancer.DefaultConnTableSizes.
	ConnTable *ConnTable `yaml:"conn_table,omitempty" json:"conn_table,omitempty"`
	// MaxServices is how many services the data path can hold (0:
	// loadbalancer.DefaultServiceCapacity); it bounds their distinct VIPs
	// too. It changes only at a restart.
	MaxServices int `yaml:"max_services,omitempty" json:"max_services,omitempty"`
	// MaxReals is how many reals the data path can hold over all
	// services, a server in two services counting twice (0:
	// loadbalancer.DefaultRealCapacity). It changes only at a restart.
	MaxReals int `yaml:"max_reals,omitempty" json:"max_reals,omitempty"`
	// MaxLocalIPs is how many distinct local IPs the data path can hold
	// over all services (0: loadbalancer.DefaultLocalIPCapacity). It
	// changes only at a restart.
	MaxLocalIPs int `yaml:"max_local_ips,omitempty" json:"max_local_ips,omitempty"`
	// LocalPortRange is "FIRST-LAST", the local ports FullNAT uses.
	LocalPortRange string `yaml:"local_port_range,omitempty" json:"local_port_range,omitempty"`
	// ExecChecks are the daemon-wide settings of exec health checks.
	ExecChecks *ExecChecks `yaml:"exec_checks,omitempty" json:"exec_checks,omitempty"`
	// Node is this node's part of a file the nodes of a cluster share:
	// its name, local IPs and BGP speaker.
	Node *Node `yaml:"node,omitempty" json:"node,omitempty"`
	// Cluster lists the cluster's nodes: their connection sync and local
	// IPs.
	Cluster *Cluster `yaml:"cluster,omitempty" json:"cluster,omitempty"`
	// Services are the virtual services.
	Services []Service `yaml:"services" json:"services"`
}

// Timeouts are connection timeouts in seconds, per state: tcp, tcp_fin
// and udp as `ipvsadm --set tcp tcpfin udp` sets them, and the handshake
// and after a RST. Profile names the set the others start from
// (loadbalancer.TimeoutProfile; default "xlb"). A key the file leaves out
// keeps the profile's value; a key it gives must be 1 to 31536000 (a
// year).
type Timeouts struct {
	Profile  string `yaml:"profile,omitempty" json:"profile,omitempty"`
	TCP      int    `yaml:"tcp,omitempty" json:"tcp,omitempty"`             // established TCP
	TCPSyn   int    `yaml:"tcp_syn,omitempty" json:"tcp_syn,omitempty"`     // TCP before the client's handshake ACK
	TCPFin   int    `yaml:"tcp_fin,omitempty" json:"tcp_fin,omitempty"`     // TCP after a FIN
	TCPClose int    `yaml:"tcp_close,omitempty" json:"tcp_close,omitempty"` // TCP after a RST
	UDP      int    `yaml:"udp,omitempty" json:"udp,omitempty"`

	// given records which keys the YAML document wrote, so that an
	// explicit 0 is told apart from a key left out.
	given timeoutKeys
}

// timeoutKeys is a set of timeout keys, one bit each.
type timeoutKeys uint8

const (
	givenTCP timeoutKeys = 1 << iota
	givenTCPFin
	givenUDP
	givenTCPSyn
	givenTCPClose
)

// UnmarshalYAML decodes the timeouts and records which keys are present.
// It uses yaml.v3's callback form on purpose: the callback decodes with
// the calling decoder, so KnownFields still rejects unknown keys, with
// their line numbers.
func (t *Timeouts) UnmarshalYAML(unmarshal func(any) error) error {
	var raw struct {
		Profile  string `yaml:"profile"`
		TCP      *int   `yaml:"tcp"`
		TCPSyn   *int   `yaml:"tcp_syn"`
		TCPFin   *int   `yaml:"tcp_fin"`
		TCPClose *int   `yaml:"tcp_close"`
		UDP      *int   `yaml:"udp"`
	}
	// The error is returned as is: yaml.v3 merges a *yaml.TypeError
	// into the document's list of errors only when it is not wrapped.
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*t = Timeouts{Profile: raw.Profile}
	for _, f := range []struct {
		src *int
		dst *int
		key timeoutKeys
	}{
		{raw.TCP, &t.TCP, givenTCP},
		{raw.TCPSyn, &t.TCPSyn, givenTCPSyn},
		{raw.TCPFin, &t.TCPFin, givenTCPFin},
		{raw.TCPClose, &t.TCPClose, givenTCPClose},
		{raw.UDP, &t.UDP, givenUDP},
	} {
		if f.src != nil {
			*f.dst = *f.src
			t.given |= f.key
		}
	}
	return nil
}

// MarshalYAML writes the keys that are set or that the document gave,
// an explicit 0 included, so that Parse reads back the same timeouts.
func (t Timeouts) MarshalYAML() (any, error) {
	var out struct {
		Profile  string `yaml:"profile,omitempty"`
		TCP      *int   `yaml:"tcp,omitempty"`
		TCPSyn   *int   `yaml:"tcp_syn,omitempty"`
		TCPFin   *int   `yaml:"tcp_fin,omitempty"`
		TCPClose *int   `yaml:"tcp_close,omitempty"`
		UDP      *int   `yaml:"udp,omitempty"`
	}
	out.Profile = t.Profile
	for _, f := range []struct {
		v   int
		key timeoutKeys
		dst **int
	}{
		{t.TCP, givenTCP, &out.TCP},
		{t.TCPSyn, givenTCPSyn, &out.TCPSyn},
		{t.TCPFin, givenTCPFin, &out.TCPFin},
		{t.TCPClose, givenTCPClose, &out.TCPClose},
		{t.UDP, givenUDP, &out.UDP},
	} {
		if f.v != 0 || t.given&f.key != 0 {
			*f.dst = &f.v
		}
	}
	return out, nil
}

// ConnTable sizes the IPv4 and the IPv6 connection table, in connections
// (both directions of a connection count once). 0 or a key left out keeps
// the default size. A size changes only at a restart.
type ConnTable struct {
	IPv4 int `yaml:"ipv4,omitempty" json:"ipv4,omitempty"`
	IPv6 int `yaml:"ipv6,omitempty" json:"ipv6,omitempty"`
}

// Workers are the worker CPUs and the frames each one's queue holds.
type Workers struct {
	CPUs  []int `yaml:"cpus" json:"cpus"`
	Queue int   `yaml:"queue,omitempty" json:"queue,omitempty"`
}

// Service is a virtual service and its reals.
type Service struct {
	// Name is optional; when given it is unique.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	VIP  string `yaml:"vip" json:"vip"`
	// HostAddress allows a VIP the host already has (an address xlb did
	// not add): without it such a VIP is refused, since the service
	// takes the host's own traffic to that address.
	HostAddress bool `yaml:"host_address,omitempty" json:"host_address,omitempty"`
	// Port is the service's port; 0 takes every port of the VIP that has
	// no service of its own.
	Port int `yaml:"port" json:"port"`
	// Protocol is tcp or udp.
	Protocol string `yaml:"protocol" json:"protocol"`
	// Scheduler is rr (the default), wrr, mh, sh, lc or wlc.
	Scheduler string `yaml:"scheduler,omitempty" json:"scheduler,omitempty"`
	// Persistent is ipvsadm -p: for this many seconds after a client's
	// last new connection, its new connections go to the same real (0:
	// off).
	Persistent int `yaml:"persistent,omitempty" json:"persistent,omitempty"`
	// Netmask groups clients for persistence, as ipvsadm -M: a dotted
	// IPv4 mask ("255.255.255.0") or a prefix length ("24"); default:
	// the whole address (/32, /128).
	Netmask string `yaml:"netmask,omitempty" json:"netmask,omitempty"`
	// Timeouts are the service's own connection timeouts, the same keys
	// as the top level's; a key it leaves out has the top level's value.
	Timeouts *Timeouts `yaml:"timeouts,omitempty" json:"timeouts,omitempty"`
	// HealthCheck checks the reals; without one every real is up.
	HealthCheck *HealthCheck `yaml:"health_check,omitempty" json:"health_check,omitempty"`
	// Mode is the forwarding method; only fullnat (the default) exists.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// ClientAddress is how a TCP service's reals learn the client's
	// address and port: none (the default), toa (TCP option 254, as
	// DPVS) or proxy-v2 (the PROXY protocol v2 header). A change
	// applies to new connections.
	ClientAddress string `yaml:"client_address,omitempty" json:"client_address,omitempty"`
	// SynProxy answers a TCP service's SYNs with SYN cookies and opens
	// the connection to a real only for a client that returns one. A
	// change applies to new connections.
	SynProxy bool `yaml:"syn_proxy,omitempty" json:"syn_proxy,omitempty"`
	// LocalIPs are the source addresses FullNAT uses towards the reals;
	// without any, the service uses node.local_ips.
	LocalIPs []string `yaml:"local_ips,omitempty" json:"local_ips,omitempty"`
	// BGPCommunities go with the announcement of the service's VIP,
	// besides node.bgp.communities.
	BGPCommunities []string `yaml:"bgp_communities,omitempty" json:"bgp_communities,omitempty"`
	// Reals are the real servers; a service may have none.
	Reals []Real `yaml:"reals,omitempty" json:"reals,omitempty"`
}

// Real is a real server of a service.
type Real struct {
	Address string `yaml:"address" json:"address"`
	// Port is the real's port; 0 keeps the client's destination port
	// (and is the only port a port-0 service's reals can have).
	Port int `yaml:"port" json:"port"`
	// Weight defaults to 1 when nil; 0 drains the real: it gets no new
	// connections and keeps those it has.
	Weight *int `yaml:"weight,omitempty" json:"weight,omitempty"`
}

// Parse decodes a configuration strictly: an unknown key is an error that
// names the key and its line, and so is an empty document or a second
// document in the same input. It does not validate the values.
func Parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parse configuration: the document is empty")
		}
		return nil, fmt.Errorf("parse configuration: %w", plainYAMLError(data, err))
	}
	if reflect.DeepEqual(c, Config{}) {
		return nil, errors.New("parse configuration: the document is empty")
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("parse configuration: %w", err)
	default:
		return nil, fmt.Errorf("parse configuration: line %d: a second YAML document; want one", next.Line)
	}
	return &c, nil
}

// Marshal writes a configuration as YAML, indented by two spaces, that
// Parse reads back as the same configuration.
func Marshal(c *Config) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	return b.Bytes(), nil
}

// Load reads, parses and validates a configuration file. Its errors name
// the file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 1 {
			return nil, fmt.Errorf("%s: %d problems:\n%w", path, len(ve.Problems), err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Clone returns a deep copy of the configuration; a nil Config clones to
// an empty one.
func (c *Config) Clone() *Config {
	if c == nil {
		return &Config{}
	}
	out := *c
	out.Interfaces = slices.Clone(c.Interfaces)
	if c.Workers != nil {
		w := *c.Workers
		w.CPUs = slices.Clone(w.CPUs)
		out.Workers = &w
	}
	if c.Timeouts != nil {
		t := *c.Timeouts
		out.Timeouts = &t
	}
	if c.ConnTable != nil {
		t := *c.ConnTable
		out.ConnTable = &t
	}
	if c.ExecChecks != nil {
		e := *c.ExecChecks
		out.ExecChecks = &e
	}
	out.Node = c.Node.clone()
	out.Cluster = c.Cluster.clone()
	if c.Services != nil {
		out.Services = make([]Service, len(c.Services))
	}
	for i, s := range c.Services {
		s.LocalIPs = slices.Clone(s.LocalIPs)
		s.BGPCommunities = slices.Clone(s.BGPCommunities)
		if s.Timeouts != nil {
			t := *s.Timeouts
			s.Timeouts = &t
		}
		if s.HealthCheck != nil {
			h := *s.HealthCheck
			s.HealthCheck = &h
		}
		if s.Reals != nil {
			reals := make([]Real, len(s.Reals))
			for j, r := range s.Reals {
				if r.Weight != nil {
					w := *r.Weight
					r.Weight = &w
				}
				reals[j] = r
			}
			s.Reals = reals
		}
		out.Services[i] = s
	}
	return &out
}
