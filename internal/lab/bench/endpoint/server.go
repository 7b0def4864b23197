// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// MaxPayload is the largest request or response payload (the MSS of a
// 1500-byte MTU: one segment each).
const MaxPayload = 1460

// ServerConfig configures the server endpoint, as dperf's server side.
type ServerConfig struct {
	PortLo, PortHi uint16 // listen ports
	ResponseSize   int    // response payload, bytes
	UDP            bool   // answer UDP datagrams instead of TCP
}

func (c ServerConfig) check() error {
	switch {
	case c.PortLo == 0 || c.PortHi < c.PortLo:
		return fmt.Errorf("server ports %d-%d: want a range of ports from 1", c.PortLo, c.PortHi)
	case c.ResponseSize < 0 || c.ResponseSize > MaxPayload:
		return fmt.Errorf("response size %d: want 0 to %d bytes", c.ResponseSize, MaxPayload)
	case c.ResponseSize == 0 && !c.UDP:
		return errors.New("response size 0: a TCP response needs at least one byte")
	}
	return nil
}

// ServerStats are the server endpoint's counters, summed over CPUs.
type ServerStats struct {
	SYNs      uint64 `json:"syns"`      // SYN-ACKs sent
	Requests  uint64 `json:"requests"`  // responses sent
	FINs      uint64 `json:"fins"`      // FIN-ACKs sent
	ACKs      uint64 `json:"acks"`      // ACKs without data, dropped
	RSTs      uint64 `json:"rsts"`      // RSTs received
	Datagrams uint64 `json:"datagrams"` // UDP answers sent
	Errors    uint64 `json:"errors"`    // segments it could not answer
}

// Sub returns s minus an earlier reading.
func (s ServerStats) Sub(e ServerStats) ServerStats {
	return ServerStats{s.SYNs - e.SYNs, s.Requests - e.Requests, s.FINs - e.FINs, s.ACKs - e.ACKs, s.RSTs - e.RSTs,
		s.Datagrams - e.Datagrams, s.Errors - e.Errors}
}

// Server is the server endpoint: one program, attached to any number of
// interfaces (every real's).
type Server struct {
	objs  epServerObjects
	links []link.Link
}

// NewServer loads the server endpoint.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{}
	if err := loadEpServerObjects(&s.objs, nil); err != nil {
		return nil, fmt.Errorf("load server endpoint: %w", err)
	}
	var secret [4]byte
	_, _ = rand.Read(secret[:])
	c := epServerEpServerCfg{PortLo: cfg.PortLo, PortHi: cfg.PortHi, ResponseSize: uint16(cfg.ResponseSize),
		CookieSecret: binary.LittleEndian.Uint32(secret[:])}
	if cfg.UDP {
		c.Udp = 1
	}
	if err := s.objs.EpServerConfig.Set(c); err != nil {
		s.objs.Close()
		return nil, fmt.Errorf("configure server endpoint: %w", err)
	}
	return s, nil
}

// Attach attaches the server to interface ifname of namespace ns.
func (s *Server) Attach(ns, ifname string) error {
	l, err := attach(s.objs.XdpEpServer, ns, ifname)
	if err != nil {
		return fmt.Errorf("server endpoint: %w", err)
	}
	s.links = append(s.links, l)
	return nil
}

// AttachPass attaches a program that passes every frame to the kernel
// to ifname in namespace ns: veth delivers the frames its peer sends
// with XDP_TX only to an interface with an XDP program, so a kernel DUT
// between the endpoints needs it on its interfaces. Close detaches it.
func (s *Server) AttachPass(ns, ifname string) error {
	l, err := attach(s.objs.XdpPass, ns, ifname)
	if err != nil {
		return fmt.Errorf("pass-through: %w", err)
	}
	s.links = append(s.links, l)
	return nil
}

// Stats sums the server's counters over CPUs.
func (s *Server) Stats() (ServerStats, error) {
	var per []epServerEpServerStats
	if err := s.objs.EpServerStats.Lookup(uint32(0), &per); err != nil {
		return ServerStats{}, fmt.Errorf("read server endpoint counters: %w", err)
	}
	var t ServerStats
	for _, p := range per {
		t.SYNs += p.Syns
		t.Requests += p.Requests
		t.FINs += p.Fins
		t.ACKs += p.Acks
		t.RSTs += p.Rsts
		t.Datagrams += p.Datagrams
		t.Errors += p.Errors
	}
	return t, nil
}

// Close detaches the server and releases it.
func (s *Server) Close() error {
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	s.links = nil
	errs = append(errs, s.objs.Close())
	return errors.Join(errs...)
}

// attach attaches prog in native mode to ifname in namespace ns.
func attach(prog *ebpf.Program, ns, ifname string) (link.Link, error) {
	var l link.Link
	err := netns.Run(ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attach to %s in %s: %w", ifname, ns, err)
	}
	return l, nil
}
