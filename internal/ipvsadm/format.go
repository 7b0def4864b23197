// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The listings follow ipvsadm 1.31's printf formats (print_title,
// print_service_entry, print_largenum, list_timeout) and DPVS's for what
// it adds (the FullNat forward name, -G's local-address table).

// forwardName is the Forward column of xlb's reals, as DPVS prints it.
const forwardName = "FullNat"

// forwardSwitch is the forwarding method option of -S's real lines,
// DPVS's --fullnat.
const forwardSwitch = "-b"

// Header is the first line of a listing of every service, where ipvsadm
// prints "IP Virtual Server version 1.2.1 (size=4096)": xlb's identity
// and version instead.
func Header(version string) string {
	return fmt.Sprintf("xlb version %s (FullNAT)\n", version)
}

// largenum writes a counter as ipvsadm's print_largenum: nine columns,
// with K, M, G or T for large values unless exact.
func largenum(b *strings.Builder, n uint64, exact bool) {
	if exact {
		s := strconv.FormatUint(n, 10)
		width := 9
		if len(s) > 8 {
			width = len(s) + 1
		}
		fmt.Fprintf(b, "%*s", width, s)
		return
	}
	switch {
	case n < 100_000_000:
		fmt.Fprintf(b, "%9d", n)
	case n < 1_000_000_000:
		fmt.Fprintf(b, "%8dK", n/1_000)
	case n < 100_000_000_000:
		fmt.Fprintf(b, "%8dM", n/1_000_000)
	case n < 100_000_000_000_000:
		fmt.Fprintf(b, "%8dG", n/1_000_000_000)
	default:
		fmt.Fprintf(b, "%8dT", n/1_000_000_000_000)
	}
}

func counters(b *strings.Builder, c api.Counters, exact bool) {
	for _, n := range []uint64{c.Conns, c.InPackets, c.OutPackets, c.InBytes, c.OutBytes} {
		largenum(b, n, exact)
	}
}

// writeTitle writes the column titles of a listing (print_title).
func writeTitle(b *strings.Builder, o ListOptions) {
	const remote = "  -> RemoteAddress:Port\n"
	switch {
	case o.Stats:
		fmt.Fprintf(b, "%-33s %8s %8s %8s %8s %8s\n%s", "Prot LocalAddress:Port",
			"Conns", "InPkts", "OutPkts", "InBytes", "OutBytes", remote)
	case o.Rate:
		fmt.Fprintf(b, "%-33s %8s %8s %8s %8s %8s\n%s", "Prot LocalAddress:Port",
			"CPS", "InPPS", "OutPPS", "InBPS", "OutBPS", remote)
	case o.Thresholds:
		fmt.Fprintf(b, "%-33s %-10s %-10s %-10s %-10s\n%s", "Prot LocalAddress:Port",
			"Uthreshold", "Lthreshold", "ActiveConn", "InActConn", remote)
	case o.PersistentConn:
		fmt.Fprintf(b, "%-33s %-9s %-11s %-10s %-10s\n%s", "Prot LocalAddress:Port",
			"Weight", "PersistConn", "ActiveConn", "InActConn", remote)
	default:
		b.WriteString("Prot LocalAddress:Port Scheduler Flags\n" +
			"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	}
}

// addrPort writes an address and port as ipvsadm -n does: a.b.c.d:port
// or [v6]:port.
func addrPort(a netip.Addr, port uint16) (string, bool) {
	return netip.AddrPortFrom(a, port).String(), a.Is6()
}

// truncate cuts s to n bytes, as ipvsadm cuts IPv4 names.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// serviceName is the name of a service in a listing ("TCP  vip:port") or
// in a rule ("-t vip:port").
func serviceName(s api.Service, rule bool) string {
	v, is6 := addrPort(s.VIP, s.Port)
	if rule {
		if s.Protocol == loadbalancer.UDP {
			return "-u " + v
		}
		return "-t " + v
	}
	name := fmt.Sprintf("%-4s %s", strings.ToUpper(s.Protocol.String()), v)
	if !is6 {
		name = truncate(name, 33)
	}
	return name
}

// persistence writes a service's persistence: flag names the words
// ("persistent" and "mask" in listings, "-p" and "-M" in rules).
func persistence(b *strings.Builder, s api.Service, persistent, mask string) {
	if s.Persistent == 0 {
		return
	}
	fmt.Fprintf(b, " %s %d", persistent, s.Persistent)
	if m := s.Mask(); m != "" {
		fmt.Fprintf(b, " %s %s", mask, m)
	}
}

// sortedServices returns the services in ipvsadm's order (family,
// protocol, address, port) with their reals in address and port order,
// or as they are with --nosort.
func sortedServices(svcs []api.Service, nosort bool) []api.Service {
	out := slices.Clone(svcs)
	if nosort {
		return out
	}
	slices.SortStableFunc(out, func(x, y api.Service) int {
		ax, ay := x.VIP, y.VIP
		if ax.Is4() != ay.Is4() {
			if ax.Is4() {
				return -1
			}
			return 1
		}
		if c := int(x.Protocol) - int(y.Protocol); c != 0 {
			return c // tcp before udp, as IPPROTO_TCP < IPPROTO_UDP
		}
		if c := ax.Compare(ay); c != 0 {
			return c
		}
		return int(x.Port) - int(y.Port)
	})
	for i := range out {
		reals := slices.Clone(out[i].Reals)
		slices.SortStableFunc(reals, func(x, y api.Real) int {
			if c := x.Address.Compare(y.Address); c != 0 {
				return c
			}
			return int(x.Port) - int(y.Port)
		})
		out[i].Reals = reals
	}
	return out
}

// writeService writes a service and its reals (print_service_entry).
func writeService(b *strings.Builder, s api.Service, o ListOptions) {
	name := serviceName(s, false)
	switch {
	case o.Stats || o.Rate:
		fmt.Fprintf(b, "%-33s", name)
		counters(b, s.Stats, o.Exact)
	default:
		fmt.Fprintf(b, "%s %s", name, s.Scheduler)
		persistence(b, s, "persistent", "mask")
	}
	b.WriteString("\n")
	for _, r := range s.Reals {
		d, is6 := addrPort(r.Address, r.Port)
		if !is6 {
			d = truncate(d, 28)
		}
		switch {
		case o.Stats:
			fmt.Fprintf(b, "  -> %-28s", d)
			counters(b, r.Stats, o.Exact)
			b.WriteString("\n")
		case o.Rate:
			fmt.Fprintf(b, "  -> %-28s %8d %8d %8d", d, r.Stats.Conns, r.Stats.InPackets, r.Stats.OutPackets)
			largenum(b, r.Stats.InBytes, o.Exact)
			largenum(b, r.Stats.OutBytes, o.Exact)
			b.WriteString("\n")
		case o.Thresholds:
			fmt.Fprintf(b, "  -> %-28s %-10d %-10d %-10d %-10d\n", d, 0, 0, r.ActiveConns, r.InactiveConns)
		case o.PersistentConn:
			fmt.Fprintf(b, "  -> %-28s %-9d %-11d %-10d %-10d\n", d, r.Weight, 0, r.ActiveConns, r.InactiveConns)
		default:
			fmt.Fprintf(b, "  -> %-28s %-7s %-6d %-10d %-10d\n", d, forwardName, r.Weight, r.ActiveConns, r.InactiveConns)
		}
	}
}

// WriteList writes ipvsadm -L's listing of svcs: header (Header's line
// when every service is listed, "" for -L with a service), the column
// titles and each service with its reals, in the layout o selects
// (--stats, --rate, --thresholds, --persistent-conn, --exact, --nosort).
// For --rate, svcs carry rates (see Rates) in their Stats.
func WriteList(w io.Writer, header string, svcs []api.Service, o ListOptions) error {
	var b strings.Builder
	b.WriteString(header)
	writeTitle(&b, o)
	for _, s := range sortedServices(svcs, o.NoSort) {
		writeService(&b, s, o)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRules writes ipvsadm -S's rules: -A for each service, then DPVS's
// -P for each of its local addresses (so that -R restores them), then -a
// for each real, forwarded by FullNAT (-b).
func WriteRules(w io.Writer, svcs []api.Service, o ListOptions) error {
	var b strings.Builder
	for _, s := range sortedServices(svcs, o.NoSort) {
		name := serviceName(s, true)
		fmt.Fprintf(&b, "-A %s -s %s", name, s.Scheduler)
		persistence(&b, s, "-p", "-M")
		b.WriteString("\n")
		for _, l := range s.LocalIPs {
			fmt.Fprintf(&b, "-P %s -z %s\n", name, l)
		}
		for _, r := range s.Reals {
			d, _ := addrPort(r.Address, r.Port)
			fmt.Fprintf(&b, "-a %s -r %s %s -w %d\n", name, d, forwardSwitch, r.Weight)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTimeouts writes ipvsadm -L --timeout's line.
func WriteTimeouts(w io.Writer, t Timeouts) error {
	_, err := fmt.Fprintf(w, "Timeout (tcp tcpfin udp): %d %d %d\n", t.TCP, t.TCPFin, t.UDP)
	return err
}

// WriteLaddrs writes DPVS's ipvsadm -G table of local addresses: the
// title (once, before the first service), then each service with its
// count and one line per address. xlb counts neither port conflicts nor
// connections by local address: those columns are 0.
func WriteLaddrs(w io.Writer, svcs []api.Service) error {
	var b strings.Builder
	for i, s := range sortedServices(svcs, false) {
		if i == 0 {
			fmt.Fprintf(&b, "%-20s %-8s %-20s %-10s %-10s\n", "VIP:VPORT", "TOTAL", "SNAT_IP", "CONFLICTS", "CONNS")
		}
		v, _ := addrPort(s.VIP, s.Port)
		fmt.Fprintf(&b, "%-20s %-8d \n", v, len(s.LocalIPs))
		for _, l := range s.LocalIPs {
			fmt.Fprintf(&b, "%-20s %-8s %-20s %-10d %-10d\n", "", "", l, 0, 0)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FindService returns the service s names among svcs.
func FindService(svcs []api.Service, s Service) (api.Service, bool) {
	for _, x := range svcs {
		if strings.EqualFold(x.Protocol.String(), s.Proto) && x.Port == s.Addr.Port() && x.VIP == s.Addr.Addr() {
			return x, true
		}
	}
	return api.Service{}, false
}

// Rates returns cur with each Stats turned into counts per second since
// prev, read interval earlier: ipvsadm --rate's CPS, InPPS, OutPPS,
// InBPS and OutBPS. What prev lacks, or what went down (zeroed
// counters), has rate 0.
func Rates(prev, cur []api.Service, interval time.Duration) []api.Service {
	secs := interval.Seconds()
	rate := func(p, c api.Counters) api.Counters {
		r := func(a, b uint64) uint64 {
			if b < a || secs <= 0 {
				return 0
			}
			return uint64(float64(b-a) / secs)
		}
		return api.Counters{Conns: r(p.Conns, c.Conns), InPackets: r(p.InPackets, c.InPackets),
			OutPackets: r(p.OutPackets, c.OutPackets), InBytes: r(p.InBytes, c.InBytes), OutBytes: r(p.OutBytes, c.OutBytes)}
	}
	out := make([]api.Service, len(cur))
	for i, s := range cur {
		out[i] = s
		out[i].Reals = slices.Clone(s.Reals)
		ps, ok := FindService(prev, Service{Proto: s.Protocol.String(), Addr: netip.AddrPortFrom(s.VIP, s.Port)})
		if !ok {
			out[i].Stats = api.Counters{}
			for j := range out[i].Reals {
				out[i].Reals[j].Stats = api.Counters{}
			}
			continue
		}
		out[i].Stats = rate(ps.Stats, s.Stats)
		for j, r := range s.Reals {
			k := slices.IndexFunc(ps.Reals, func(o api.Real) bool { return o.Port == r.Port && o.Address == r.Address })
			if k < 0 {
				out[i].Reals[j].Stats = api.Counters{}
				continue
			}
			out[i].Reals[j].Stats = rate(ps.Reals[k].Stats, r.Stats)
		}
	}
	return out
}
