// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// addCounters adds one CPU's counters to c.
func addCounters(c *loadbalancer.Counters, o xlbXlbCounters) {
	c.Conns += o.Conns
	c.InPackets += o.InPackets
	c.InBytes += o.InBytes
	c.OutPackets += o.OutPackets
	c.OutBytes += o.OutBytes
}

func sumCounters(m *ebpf.Map, id uint32) (loadbalancer.Counters, error) {
	var perCPU []xlbXlbCounters
	var c loadbalancer.Counters
	if err := m.Lookup(id, &perCPU); err != nil {
		return c, fmt.Errorf("read %s[%d]: %w", m, id, err)
	}
	for _, v := range perCPU {
		addCounters(&c, v)
	}
	return c, nil
}

// connCounts counts the live forward entries of each real id: active
// (established) and inactive.
func (d *Datapath) connCounts() (active, inactive map[uint16]int, err error) {
	active, inactive = map[uint16]int{}, map[uint16]int{}
	err = d.Conns(func(c loadbalancer.ConnEntry) bool {
		if c.Reverse || c.Idle > c.Timeout {
			return true
		}
		if c.State == loadbalancer.StateEstablished {
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
func (d *Datapath) Status() ([]loadbalancer.ServiceStatus, error) {
	active, inactive, err := d.connCounts()
	if err != nil {
		return nil, err
	}
	svcs := d.Services()
	out := make([]loadbalancer.ServiceStatus, 0, len(svcs))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, svc := range svcs {
		st, ok := d.reg.services[svc.Key]
		if !ok {
			continue
		}
		s := loadbalancer.ServiceStatus{Service: svc}
		var err error
		if s.Stats, err = sumCounters(d.objs.SvcStats, st.id); err != nil {
			return nil, err
		}
		if s.NoLport, err = sumSlot(d.objs.SvcNoLport, st.id); err != nil {
			return nil, err
		}
		for _, r := range st.reals {
			rs := loadbalancer.RealStatus{Real: r.real, ActiveConns: active[uint16(r.id)], InactiveConns: inactive[uint16(r.id)],
				Down: r.down, Unresolved: r.unresolved, TableWeight: r.tableWeight(st.svc.Scheduler)}
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

// EventNames names the data path's events (enum xlb_event), indexed by
// value, as the metrics and the CLI show them.
var EventNames = []string{
	"icmp_too_big",        // ICMP frag needed / packet too big sent (pmtu.h)
	"toa_added",           // a TOA option added to a client's segment
	"toa_no_room",         // ... not added: the segment's options were full
	"proxy_header_sent",   // a PROXY v2 header put ahead of a client's data
	"mss_lowered",         // a real's SYN-ACK MSS lowered for TOA / PROXY v2
	"syncookie_sent",      // SYN proxy: a SYN answered with a SYN cookie
	"syncookie_valid",     // ... an ACK returned a valid cookie: a SYN to the real
	"synproxy_opened",     // ... the real answered: the connection is through
	"synproxy_early_kept", // ... client data kept until the real answered
	"sync_lost",           // connection sync: an event lost to a full ring
}

// Events returns how often each of the data path's events happened, by
// name (EventNames).
func (d *Datapath) Events() (map[string]uint64, error) {
	counts, err := sumPerCPU(d.objs.EventStats, int(xlbXlbEventEVENT_MAX))
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(EventNames))
	for i, name := range EventNames {
		out[name] = counts[i]
	}
	return out, nil
}

// ICMPTooBigSent returns how many ICMP fragmentation-needed and Packet
// Too Big errors the data path has sent (pmtu.h).
func (d *Datapath) ICMPTooBigSent() (uint64, error) {
	ev, err := d.Events()
	return ev["icmp_too_big"], err
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
