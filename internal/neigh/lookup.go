// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NextHop is where the host sends packets for one destination and
// whether the data path can forward there now.
type NextHop struct {
	Hop
	// Resolved: the neighbour entry has a link-layer address (or none is
	// needed: a local address, a device without ARP).
	Resolved bool
	// Reason says why not, for operators ("no route to 10.9.0.1",
	// "next hop 10.0.0.2 on eth1: INCOMPLETE").
	Reason string
}

// Lookup answers where destinations go and whether their next hops are
// resolved, over netlink: no process is started, so a destination costs
// microseconds and the daemon can ask at every apply without waiting on
// anything. XDP cannot resolve a neighbour, so a real whose next hop is
// not resolved is kept out of scheduling until it is (the daemon's
// "unresolved" state).
type Lookup struct {
	h *netlink.Handle
}

// NewLookup opens a netlink handle in the network namespace of the file
// nsPath (e.g. /run/netns/NAME), or in the caller's when nsPath is empty.
func NewLookup(nsPath string) (*Lookup, error) {
	if nsPath == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("neighbour lookup: open netlink: %w", err)
		}
		return &Lookup{h: h}, nil
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("neighbour lookup: open %s: %w", nsPath, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("neighbour lookup: open netlink in %s: %w", nsPath, err)
	}
	return &Lookup{h: h}, nil
}

// Close releases the netlink handle.
func (l *Lookup) Close() { l.h.Close() }

// resolvedNUD are the neighbour states with a link-layer address the data
// path can forward with: REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP.
const resolvedNUD = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY |
	netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// NextHops returns the next hop of each destination. Each device's
// neighbour table is read once per call, whatever the number of
// destinations.
func (l *Lookup) NextHops(dests []netip.Addr) map[netip.Addr]NextHop {
	out := make(map[netip.Addr]NextHop, len(dests))
	links := map[int]netlink.Link{}
	tables := map[[2]int]map[netip.Addr]int{} // (ifindex, family) -> addr -> NUD state
	for _, dst := range dests {
		if _, done := out[dst]; !done {
			out[dst] = l.nextHop(dst, links, tables)
		}
	}
	return out
}

func (l *Lookup) nextHop(dst netip.Addr, links map[int]netlink.Link, tables map[[2]int]map[netip.Addr]int) NextHop {
	dst = dst.Unmap()
	routes, err := l.h.RouteGet(dst.AsSlice())
	if err != nil || len(routes) == 0 {
		reason := "no route to " + dst.String()
		if err != nil && !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH) {
			reason += ": " + err.Error()
		}
		return NextHop{Hop: Hop{Addr: dst}, Reason: reason}
	}
	r := routes[0]
	if r.Type == unix.RTN_LOCAL {
		return NextHop{Hop: Hop{Addr: dst, Dev: "lo"}, Resolved: true}
	}
	if r.Type != unix.RTN_UNICAST {
		return NextHop{Hop: Hop{Addr: dst}, Reason: fmt.Sprintf("no route to %s (route type %d)", dst, r.Type)}
	}
	ifindex, gw := r.LinkIndex, r.Gw
	if len(r.MultiPath) > 0 {
		ifindex, gw = r.MultiPath[0].LinkIndex, r.MultiPath[0].Gw
	}
	hopAddr := dst
	if a, ok := netip.AddrFromSlice(gw); ok && gw != nil {
		hopAddr = a.Unmap()
	}
	link, ok := links[ifindex]
	if !ok {
		link, err = l.h.LinkByIndex(ifindex)
		if err != nil {
			return NextHop{Hop: Hop{Addr: hopAddr}, Reason: fmt.Sprintf("next hop %s: interface %d: %v", hopAddr, ifindex, err)}
		}
		links[ifindex] = link
	}
	attrs := link.Attrs()
	h := Hop{Addr: hopAddr, Dev: attrs.Name}
	if attrs.RawFlags&unix.IFF_NOARP != 0 || attrs.Flags&net.FlagLoopback != 0 {
		return NextHop{Hop: h, Resolved: true}
	}
	family := netlink.FAMILY_V4
	if hopAddr.Is6() {
		family = netlink.FAMILY_V6
	}
	key := [2]int{ifindex, family}
	table, ok := tables[key]
	if !ok {
		table = map[netip.Addr]int{}
		entries, err := l.h.NeighList(ifindex, family)
		if err != nil {
			return NextHop{Hop: h, Reason: fmt.Sprintf("next hop %s: read neighbours of %s: %v", h, attrs.Name, err)}
		}
		for _, e := range entries {
			if a, ok := netip.AddrFromSlice(e.IP); ok {
				table[a.Unmap()] = e.State
			}
		}
		tables[key] = table
	}
	state, ok := table[hopAddr]
	switch {
	case !ok:
		return NextHop{Hop: h, Reason: fmt.Sprintf("next hop %s: no neighbour entry yet", h)}
	case state&resolvedNUD != 0:
		return NextHop{Hop: h, Resolved: true}
	}
	return NextHop{Hop: h, Reason: fmt.Sprintf("next hop %s: %s", h, nudName(state))}
}

// nudName names a neighbour state as ip-neighbour(8) does.
func nudName(state int) string {
	switch state {
	case netlink.NUD_NONE:
		return "NONE"
	case netlink.NUD_INCOMPLETE:
		return "INCOMPLETE (no answer yet)"
	case netlink.NUD_FAILED:
		return "FAILED (no answer)"
	}
	return fmt.Sprintf("state %#x", state)
}
