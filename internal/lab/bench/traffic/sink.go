// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"fmt"
	"math"
	"net"

	"github.com/cilium/ebpf"
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
	cfg   sinkSinkConfig // what sink_cfg holds
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
	cfg := s.cfg
	cfg.Reflect = boolU32(on)
	if err := s.setCfg(cfg); err != nil {
		return fmt.Errorf("sink mode: %w", err)
	}
	return nil
}

// setCfg writes the sinks' configuration, which the program reads once
// a frame.
func (s *Sink) setCfg(cfg sinkSinkConfig) error {
	if err := s.objs.SinkCfg.Put(uint32(0), cfg); err != nil {
		return err
	}
	s.cfg = cfg
	return nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
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

// Latency is what the sinks timed: each frame's time from the
// generator's XDP_TX to a sink, over every CPU and interface.
type Latency struct {
	Frames uint64  `json:"frames"`
	MinNs  float64 `json:"min_ns"`
	AvgNs  float64 `json:"avg_ns"`
	P50Ns  float64 `json:"p50_ns"`
	P99Ns  float64 `json:"p99_ns"`
	MaxNs  float64 `json:"max_ns"`
}

// TimeFrames turns the timing of stamped frames (Frame.Stamp) on or
// off; on, it starts from nothing.
func (s *Sink) TimeFrames(on bool) error {
	if on {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return err
		}
		if err := s.objs.SinkLat.Put(uint32(0), make([]sinkSinkLatency, n)); err != nil {
			return fmt.Errorf("reset sink latency: %w", err)
		}
	}
	cfg := s.cfg
	cfg.Timed = boolU32(on)
	if err := s.setCfg(cfg); err != nil {
		return fmt.Errorf("sink latency: %w", err)
	}
	return nil
}

// Latency reads what the sinks timed since TimeFrames(true).
func (s *Sink) Latency() (Latency, error) {
	var per []sinkSinkLatency
	if err := s.objs.SinkLat.Lookup(uint32(0), &per); err != nil {
		return Latency{}, fmt.Errorf("read sink latency: %w", err)
	}
	var all sinkSinkLatency
	for i := range per {
		p := &per[i]
		if p.Count == 0 {
			continue
		}
		if all.Count == 0 || p.MinNs < all.MinNs {
			all.MinNs = p.MinNs
		}
		all.MaxNs = max(all.MaxNs, p.MaxNs)
		all.Count += p.Count
		all.SumNs += p.SumNs
		for b, n := range p.Buckets {
			all.Buckets[b] += n
		}
	}
	return latencyOf(&all), nil
}

// latencyOf summarises a histogram: percentiles at their bucket's
// middle, within the extremes seen.
func latencyOf(h *sinkSinkLatency) Latency {
	l := Latency{Frames: h.Count}
	if h.Count == 0 {
		return l
	}
	l.MinNs, l.MaxNs, l.AvgNs = float64(h.MinNs), float64(h.MaxNs), float64(h.SumNs)/float64(h.Count)
	pct := func(p float64) float64 {
		rank := uint64(math.Ceil(p / 100 * float64(h.Count)))
		var seen uint64
		for b, n := range h.Buckets {
			if seen += uint64(n); seen >= rank {
				lo, hi := bucketBounds(b)
				return min(max((lo+hi)/2, l.MinNs), l.MaxNs)
			}
		}
		return l.MaxNs
	}
	l.P50Ns, l.P99Ns = pct(50), pct(99)
	return l
}

// bucketBounds are the values bucket b of bpf/bench/sink.bpf.c's
// lat_bucket holds, [lo, hi).
func bucketBounds(b int) (lo, hi float64) {
	if b < 16 {
		return float64(b), float64(b + 1)
	}
	e, m := b/16+3, b%16
	width := math.Ldexp(1, e-4)
	lo = float64(16+m) * width
	return lo, lo + width
}
