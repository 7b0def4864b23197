// SPDX-License-Identifier: Apache-2.0

package doctor

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/xlb-dev/xlb/internal/neigh"
	"github.com/xlb-dev/xlb/internal/txmon"
)

// The XDP attach modes netlink reports (XDP_ATTACHED_*).
const (
	xdpAttachedDrv = 1
	xdpAttachedSKB = 2
)

// Interfaces checks each interface the data path is (to be) attached to:
// it exists and is up, the XDP program is attached in the mode asked
// (when attached says a daemon runs), a veth's peer takes redirected
// frames, and the MTU suits the program (single-buffer programs carry
// frames up to singleMTU natively) and the other interfaces (a frame
// from a larger MTU gets ICMP too big towards a smaller one).
func Interfaces(names []string, mode string, attached bool, multiBuffer bool, singleMTU int) []Finding {
	var out []Finding
	mtus := map[string]int{}
	for _, name := range names {
		check := "interface " + name
		l, err := netlink.LinkByName(name)
		if err != nil {
			out = append(out, Finding{Check: check, Severity: Problem, What: fmt.Sprintf("%s is not an interface here: %v", name, err),
				Fix: "fix interfaces: in the configuration, or run where the interface is (the daemon's network namespace)"})
			continue
		}
		a := l.Attrs()
		mtus[name] = a.MTU
		if a.OperState != netlink.OperUp && a.OperState != netlink.OperUnknown {
			out = append(out, Finding{Check: check, Severity: Problem, What: fmt.Sprintf("%s is %s", name, a.OperState),
				Fix: "ip link set dev " + name + " up"})
		}
		out = append(out, xdpMode(check, name, a.Xdp, mode, attached))
		if w, err := txmon.CheckVethPeer(name); err != nil {
			out = append(out, Finding{Check: check + " veth peer", Severity: Warning, What: "cannot check the veth peer: " + err.Error()})
		} else if w != "" {
			what, fix, _ := strings.Cut(w, "; fix: ")
			out = append(out, Finding{Check: check + " veth peer", Severity: Problem, What: what, Fix: fix})
		}
		if !multiBuffer && mode == "native" && a.MTU > singleMTU {
			out = append(out, Finding{Check: check + " MTU", Severity: Problem,
				What: fmt.Sprintf("%s has MTU %d, above the %d a single-buffer XDP program takes natively (this kernel has no multi-buffer XDP, Linux 5.18)", name, a.MTU, singleMTU),
				Fix:  fmt.Sprintf("ip link set dev %s mtu %d, or xdp_mode: generic, or Linux 5.18+", name, singleMTU)})
		}
	}
	if len(mtus) > 1 {
		lo := slices.Min(slices.Collect(maps.Values(mtus)))
		hi := slices.Max(slices.Collect(maps.Values(mtus)))
		f := Finding{Check: "MTU", Severity: OK, What: fmt.Sprintf("every interface has MTU %d", lo)}
		if lo != hi {
			f.Severity = Warning
			f.What = fmt.Sprintf("the interfaces' MTUs differ (%s): a packet above %d bytes that must leave by a smaller one is answered with ICMP too big (xlb stats: icmp sent too_big)", describeMTUs(mtus), lo)
			f.Fix = "the same MTU on every attached interface, if the hosts behind them use the largest"
		}
		out = append(out, f)
	}
	return out
}

func xdpMode(check, name string, x *netlink.LinkXdp, mode string, attached bool) Finding {
	f := Finding{Check: check + " XDP"}
	switch {
	case x == nil || !x.Attached:
		if attached {
			f.Severity, f.What = Problem, fmt.Sprintf("no XDP program on %s although the daemon says it is attached", name)
			f.Fix = "restart the daemon (systemctl restart xlb) and read its log"
		} else {
			f.Severity, f.What = OK, fmt.Sprintf("no XDP program on %s (no daemon runs)", name)
		}
	case x.AttachMode == xdpAttachedDrv && mode == "generic", x.AttachMode == xdpAttachedSKB && mode == "native":
		got := map[uint32]string{xdpAttachedDrv: "native", xdpAttachedSKB: "generic"}[x.AttachMode]
		f.Severity, f.What = Problem, fmt.Sprintf("%s runs an XDP program in %s mode, the configuration asks %s", name, got, mode)
		f.Fix = "restart the daemon: the mode changes only at a start"
	default:
		got := map[uint32]string{xdpAttachedDrv: "native", xdpAttachedSKB: "generic"}[x.AttachMode]
		f.Severity, f.What = OK, fmt.Sprintf("%s runs program %d in %s mode", name, x.ProgId, cmp.Or(got, fmt.Sprintf("mode %d", x.AttachMode)))
	}
	return f
}

func describeMTUs(m map[string]int) string {
	names := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

// NextHops checks that the next hop of every real is resolved (XDP
// cannot resolve one: a real whose next hop is not resolved gets no new
// connection).
func NextHops(reals []netip.Addr) []Finding {
	if len(reals) == 0 {
		return nil
	}
	l, err := neigh.NewLookup("")
	if err != nil {
		return []Finding{{Check: "next hops", Severity: Warning, What: err.Error()}}
	}
	defer l.Close()
	hops := l.NextHops(reals)
	var out []Finding
	bad := 0
	for _, a := range reals {
		nh := hops[a]
		if nh.Resolved {
			continue
		}
		bad++
		out = append(out, Finding{Check: "next hop of " + a.String(), Severity: Problem,
			What: fmt.Sprintf("real %s: %s; it gets no new connections", a, nh.Reason),
			Fix:  fmt.Sprintf("check that %s answers ARP or neighbour discovery on its link (ip neigh show %s; a route to it)", nh.Hop.Addr, nh.Hop.Addr)})
	}
	if bad == 0 {
		out = append(out, Finding{Check: "next hops", Severity: OK, What: fmt.Sprintf("the next hops of all %d real addresses are resolved", len(reals))})
	}
	return out
}
