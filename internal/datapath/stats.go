// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
)

// Counters are a service's or a real's traffic counters, summed over CPUs.
// In is the client -> real direction, Out the replies, as in ipvsadm.
type Counters struct {
	Conns      uint64
	InPackets  uint64
	InBytes    uint64
	OutPackets uint64
	OutBytes   uint64
}

func (c *Counters) add(o xlbXlbCounters) {
	c.Conns += o.Conns
	c.InPackets += o.InPackets
	c.InBytes += o.InBytes
	c.OutPackets += o.OutPackets
	c.OutBytes += o.OutBytes
}

func sumCounters(m *ebpf.Map, id uint32) (Counters, error) {
	var perCPU []xlbXlbCounters
	var c Counters
	if err := m.Lookup(id, &perCPU); err != nil {
		return c, fmt.Errorf("read %s[%d]: %w", m, id, err)
	}
	for _, v := range perCPU {
		c.add(v)
	}
	return c, nil
}

// RealStatus is a real with its counters and connections (ipvsadm's
// ActiveConn: established; InActConn: every other live state).
type RealStatus struct {
	Real
	Stats         Counters
	ActiveConns   int
	InactiveConns int
	// Down: the real failed its health check (no new connections).
	Down bool
	// TableWeight is the weight the schedule table gives it now: 0 when
	// down or drained, the derived weight for lc/wlc.
	TableWeight uint32
	// Health is up or down for a real its service checks, else empty;
	// HealthReason says why its last check failed. The daemon fills
	// them in (the data path knows only Down).
	Health, HealthReason string
}

// ServiceStatus is a service with its counters and its reals'.
type ServiceStatus struct {
	Service
	Stats Counters
	Reals []RealStatus
}

// timeout returns how long an entry in state s lives without packets.
func (s Settings) timeout(st ConnState) time.Duration {
	switch st {
	case StateSynSent:
		return s.TCPSynTimeout
	case StateEstablished:
		return s.TCPTimeout
	case StateFin:
		return s.TCPFinTimeout
	case StateClose:
		return s.TCPRstTimeout
	}
	return s.UDPTimeout
}

// connCounts counts the live forward entries of each real id: active
// (established) and inactive.
func (d *Datapath) connCounts() (active, inactive map[uint16]int, err error) {
	active, inactive = map[uint16]int{}, map[uint16]int{}
	settings := d.Settings()
	err = d.Conns(func(c ConnEntry) bool {
		if c.Reverse || c.Idle > settings.timeout(c.State) {
			return true
		}
		if c.State == StateEstablished {
			active[c.RealID]++
		} else {
			inactive[c.RealID]++
		}
		return true
	})
	return active, inactive, err
}

// Status returns every service with its reals, counters and connection
// counts, in id order. It walks the connection table.
func (d *Datapath) Status() ([]ServiceStatus, error) {
	active, inactive, err := d.connCounts()
	if err != nil {
		return nil, err
	}
	svcs := d.Services()
	out := make([]ServiceStatus, 0, len(svcs))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, svc := range svcs {
		st, ok := d.reg.services[svc.Key]
		if !ok {
			continue
		}
		s := ServiceStatus{Service: svc}
		var err error
		if s.Stats, err = sumCounters(d.objs.SvcStats, st.id); err != nil {
			return nil, err
		}
		for _, r := range st.reals {
			rs := RealStatus{Real: r.real, ActiveConns: active[uint16(r.id)], InactiveConns: inactive[uint16(r.id)],
				Down: r.down, TableWeight: r.tableWeight(st.svc.Scheduler)}
			if rs.Stats, err = sumCounters(d.objs.RealStats, r.id); err != nil {
				return nil, err
			}
			s.Reals = append(s.Reals, rs)
		}
		out = append(out, s)
	}
	return out, nil
}

func sumPerCPU(m *ebpf.Map, n int) ([]uint64, error) {
	out := make([]uint64, n)
	for i := range out {
		var perCPU []uint64
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("read %s[%d]: %w", m, i, err)
		}
		for _, v := range perCPU {
			out[i] += v
		}
	}
	return out, nil
}

// ICMPTooBigSent returns how many ICMP fragmentation-needed and Packet
// Too Big errors the data path has sent (pmtu.h).
func (d *Datapath) ICMPTooBigSent() (uint64, error) {
	counts, err := sumPerCPU(d.objs.EventStats, int(xlbXlbEventEVENT_MAX))
	if err != nil {
		return 0, err
	}
	return counts[xlbXlbEventEVENT_ICMP_TOO_BIG], nil
}

// Drops returns the packets dropped so far, by reason.
func (d *Datapath) Drops() (map[DropReason]uint64, error) {
	counts, err := sumPerCPU(d.objs.DropStats, int(numDropReasons))
	if err != nil {
		return nil, err
	}
	out := make(map[DropReason]uint64, len(counts))
	for i, n := range counts {
		out[DropReason(i)] = n
	}
	return out, nil
}

// Verdict is an XDP action.
type Verdict uint32

// XDP actions.
const (
	XDPAborted Verdict = iota
	XDPDrop
	XDPPass
	XDPTx
	XDPRedirect
)

func (v Verdict) String() string {
	names := []string{"aborted", "drop", "pass", "tx", "redirect"}
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("verdict(%d)", uint32(v))
}

// Verdicts returns how many packets ended with each XDP action.
func (d *Datapath) Verdicts() (map[Verdict]uint64, error) {
	counts, err := sumPerCPU(d.objs.VerdictStats, int(XDPRedirect)+1)
	if err != nil {
		return nil, err
	}
	out := make(map[Verdict]uint64, len(counts))
	for i, n := range counts {
		out[Verdict(i)] = n
	}
	return out, nil
}
