// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"fmt"
	"net"

	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// Sink counts the generator's frames where they arrive: one XDP program
// attached to every receiving interface, counters shared, read exactly.
type Sink struct {
	objs  sinkObjects
	links []link.Link
	names []string
}

// SinkCount is what the sinks received.
type SinkCount struct {
	Packets, Bytes uint64 // bench frames, dropped at the sink
	Other          uint64 // other frames, passed to the kernel
}

// NewSink loads the sink program.
func NewSink() (*Sink, error) {
	s := &Sink{}
	if _, err := xdpfrags.LoadAndAssign(loadSink, &s.objs); err != nil {
		return nil, fmt.Errorf("load sink: %w", err)
	}
	return s, nil
}

// Attach attaches the sink natively to ifname in namespace ns.
func (s *Sink) Attach(ns, ifname string) error {
	return netns.Run(ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return fmt.Errorf("sink on %s in %s: %w", ifname, ns, err)
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: s.objs.XdpSink, Interface: ifc.Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attach sink to %s in %s: %w", ifname, ns, err)
		}
		s.links = append(s.links, l)
		s.names = append(s.names, ns+"/"+ifname)
		return nil
	})
}

// Detach detaches the sink of ifname in namespace ns.
func (s *Sink) Detach(ns, ifname string) error {
	for i, name := range s.names {
		if name == ns+"/"+ifname {
			err := s.links[i].Close()
			s.links = append(s.links[:i], s.links[i+1:]...)
			s.names = append(s.names[:i], s.names[i+1:]...)
			return err
		}
	}
	return fmt.Errorf("no sink on %s in %s", ifname, ns)
}

// Reflect sets whether the sinks send bench frames back where they came
// from (MACs and IP addresses swapped) rather than drop them.
func (s *Sink) Reflect(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := s.objs.SinkCfg.Put(uint32(0), v); err != nil {
		return fmt.Errorf("sink mode: %w", err)
	}
	return nil
}

// Alive checks that every sink is still attached.
func (s *Sink) Alive() error {
	for i, l := range s.links {
		if _, err := l.Info(); err != nil {
			return fmt.Errorf("sink on %s: %w", s.names[i], err)
		}
	}
	return nil
}

// Count returns the counters summed over CPUs and interfaces.
func (s *Sink) Count() (SinkCount, error) {
	var per []sinkSinkCounters
	if err := s.objs.SinkStats.Lookup(uint32(0), &per); err != nil {
		return SinkCount{}, fmt.Errorf("read sink counters: %w", err)
	}
	var c SinkCount
	for _, p := range per {
		c.Packets += p.Packets
		c.Bytes += p.Bytes
		c.Other += p.Other
	}
	return c, nil
}

// Close detaches every sink and releases the program.
func (s *Sink) Close() error {
	for _, l := range s.links {
		_ = l.Close()
	}
	s.links = nil
	return s.objs.Close()
}
