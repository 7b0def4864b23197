// SPDX-License-Identifier: Apache-2.0

// Package listing prints services and reals the way `ipvsadm -L -n`
// does, so that operators read xlb as they read IPVS and DPVS.
package listing

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Options select the listing's columns, as ipvsadm's flags do.
type Options struct {
	Stats bool // --stats: connections, packets and bytes instead of weights
}

func protoName(p loadbalancer.Proto) string { return strings.ToUpper(p.String()) }

func addrPort(a netip.Addr, port uint16) string { return netip.AddrPortFrom(a, port).String() }

// Write prints the services the daemon's API sent in ipvsadm's layout: a
// header, then each service followed by its reals.
func Write(w io.Writer, services []api.Service, o Options) error {
	var b strings.Builder
	// a Health column when a service has a health check or a real is
	// unresolved
	checked := false
	for _, s := range services {
		for _, r := range s.Reals {
			checked = checked || r.Health != "" || r.NextHop != ""
		}
	}
	if o.Stats {
		fmt.Fprintf(&b, "%-33s %8s %8s %8s %8s %8s\n", "Prot LocalAddress:Port", "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes")
		fmt.Fprintf(&b, "  -> RemoteAddress:Port\n")
	} else {
		fmt.Fprintf(&b, "Prot LocalAddress:Port Scheduler Flags\n")
		if checked {
			fmt.Fprintf(&b, "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn Health\n")
		} else {
			fmt.Fprintf(&b, "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
		}
	}
	for _, s := range services {
		svc := fmt.Sprintf("%-4s %s", protoName(s.Protocol), addrPort(s.VIP, s.Port))
		if o.Stats {
			c := s.Stats
			fmt.Fprintf(&b, "%-33s %8d %8d %8d %8d %8d\n", svc, c.Conns, c.InPackets, c.OutPackets, c.InBytes, c.OutBytes)
		} else {
			fmt.Fprintf(&b, "%s %s%s\n", svc, s.Scheduler, flags(s))
		}
		for _, r := range s.Reals {
			real := "  -> " + addrPort(r.Address, r.Port)
			if o.Stats {
				c := r.Stats
				fmt.Fprintf(&b, "%-33s %8d %8d %8d %8d %8d\n", real, c.Conns, c.InPackets, c.OutPackets, c.InBytes, c.OutBytes)
			} else if checked {
				fmt.Fprintf(&b, "%-33s %-7s %-6d %-10d %-9d %s\n", real, "FullNat", r.Weight, r.ActiveConns, r.InactiveConns, healthCell(r))
			} else {
				fmt.Fprintf(&b, "%-33s %-7s %-6d %-10d %d\n", real, "FullNat", r.Weight, r.ActiveConns, r.InactiveConns)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flags is the Flags column of a service line, as ipvsadm prints it:
// " persistent 300", with " mask 255.255.255.0" (IPv4) or " mask 64"
// (IPv6) when clients are grouped.
func flags(s api.Service) string {
	if s.Persistent == 0 {
		return ""
	}
	out := fmt.Sprintf(" persistent %d", s.Persistent)
	if m := s.Mask(); m != "" {
		out += " mask " + m
	}
	return out
}

// WriteRate prints ipvsadm --rate: connections, packets and bytes per
// second between two readings taken interval apart.
func WriteRate(w io.Writer, prev, cur []api.Service, interval time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-33s %8s %8s %8s %8s %8s\n", "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS")
	fmt.Fprintf(&b, "  -> RemoteAddress:Port\n")
	for _, r := range rateRows(prev, cur, interval) {
		fmt.Fprintf(&b, "%-33s %8d %8d %8d %8d %8d\n", r.name, r.rates.Conns, r.rates.InPackets, r.rates.OutPackets, r.rates.InBytes, r.rates.OutBytes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rateRow is a service or a real with its counters per second.
type rateRow struct {
	name  string
	rates api.Counters // per second
	real  *api.Real    // nil for a service
}

// rateRows are the services of cur, each followed by its reals, with
// their counters per second since prev, a reading interval earlier. A
// service or real new in cur counts from zero; a counter that went back
// (zeroed) shows 0.
func rateRows(prev, cur []api.Service, interval time.Duration) []rateRow {
	rate := func(a, b uint64) uint64 { return uint64(perSecond(a, b, interval)) }
	rates := func(p, c api.Counters) api.Counters {
		return api.Counters{Conns: rate(p.Conns, c.Conns), InPackets: rate(p.InPackets, c.InPackets),
			OutPackets: rate(p.OutPackets, c.OutPackets), InBytes: rate(p.InBytes, c.InBytes), OutBytes: rate(p.OutBytes, c.OutBytes)}
	}
	var out []rateRow
	for _, s := range cur {
		var ps api.Service
		for _, o := range prev {
			if o.Key() == s.Key() {
				ps = o
			}
		}
		out = append(out, rateRow{name: fmt.Sprintf("%-4s %s", protoName(s.Protocol), addrPort(s.VIP, s.Port)), rates: rates(ps.Stats, s.Stats)})
		for i, r := range s.Reals {
			var pr api.Counters
			for _, o := range ps.Reals {
				if o.Address == r.Address && o.Port == r.Port {
					pr = o.Stats
				}
			}
			out = append(out, rateRow{name: "  -> " + addrPort(r.Address, r.Port), rates: rates(pr, r.Stats), real: &s.Reals[i]})
		}
	}
	return out
}

// perSecond is how fast a counter went from a to b over interval; 0 when
// it went back (zeroed) or no time passed.
func perSecond(a, b uint64, interval time.Duration) float64 {
	if b < a || interval <= 0 {
		return 0
	}
	return float64(b-a) / interval.Seconds()
}

// healthCell is a real's Health column: its health check's state ("-"
// without one) and "unresolved" while its next hop is.
func healthCell(r api.Real) string {
	switch {
	case r.NextHop != "" && (r.Health == "" || r.Health == "up"):
		return r.NextHop
	case r.NextHop != "":
		return r.Health + "," + r.NextHop
	case r.Health == "":
		return "-"
	}
	return r.Health
}
