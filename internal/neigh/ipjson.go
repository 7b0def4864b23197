// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
)

// Hop is a next hop on an egress device: what a neighbour entry is for.
type Hop struct {
	Dev  string
	Addr netip.Addr
}

func (h Hop) String() string { return h.Addr.String() + " dev " + h.Dev }

// ipRoute is one route of `ip -j route get` or `ip -j route show`.
type ipRoute struct {
	Type     string  `json:"type"` // absent for unicast
	Dst      string  `json:"dst"`
	Gateway  string  `json:"gateway"`
	Via      *ipVia  `json:"via"` // a gateway of the other family
	Dev      string  `json:"dev"`
	Nexthops []ipHop `json:"nexthops"`
}

// ipVia is the "via" of a route whose gateway is of the other family.
type ipVia struct {
	Family string `json:"family"`
	Host   string `json:"host"`
}

// ipHop is one path of a multipath route.
type ipHop struct {
	Gateway string `json:"gateway"`
	Via     *ipVia `json:"via"`
	Dev     string `json:"dev"`
}

// gateway returns the route's gateway, if it has one.
func gateway(gw string, via *ipVia) (netip.Addr, bool, error) {
	if gw == "" && via != nil {
		gw = via.Host
	}
	if gw == "" {
		return netip.Addr{}, false, nil
	}
	a, err := netip.ParseAddr(gw)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("gateway %q: %w", gw, err)
	}
	return a.Unmap(), true, nil
}

// parseRouteGet reads the answer of `ip -j route get ADDR` and returns the
// neighbour a packet to ADDR needs: the gateway, or ADDR itself when it is
// on-link. ok is false when no neighbour is needed (a local, broadcast or
// blackhole route, or a device without one).
func parseRouteGet(out []byte) (h Hop, ok bool, err error) {
	var routes []ipRoute
	if err := json.Unmarshal(out, &routes); err != nil {
		return Hop{}, false, fmt.Errorf("parse ip route get: %w", err)
	}
	if len(routes) == 0 {
		return Hop{}, false, fmt.Errorf("parse ip route get: no route in %q", out)
	}
	r := routes[0]
	if r.Type != "" && r.Type != "unicast" {
		return Hop{}, false, nil
	}
	if r.Dev == "" || r.Dev == "lo" {
		return Hop{}, false, nil
	}
	gw, has, err := gateway(r.Gateway, r.Via)
	if err != nil {
		return Hop{}, false, fmt.Errorf("parse ip route get: %w", err)
	}
	if has {
		return Hop{Dev: r.Dev, Addr: gw}, true, nil
	}
	dst, err := netip.ParseAddr(r.Dst)
	if err != nil {
		return Hop{}, false, fmt.Errorf("parse ip route get: dst %q: %w", r.Dst, err)
	}
	return Hop{Dev: r.Dev, Addr: dst.Unmap()}, true, nil
}

// parseGateways reads the answer of `ip -j route show dev DEV` (either
// family) and returns the gateways of its routes on dev, once each, in
// the order found. The answer omits "dev" for single-path routes (it is
// the one asked for); multipath routes name each path's device.
func parseGateways(out []byte, dev string) ([]Hop, error) {
	var routes []ipRoute
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("parse ip route show dev %s: %w", dev, err)
	}
	var hops []Hop
	add := func(gw string, via *ipVia, on string) error {
		a, has, err := gateway(gw, via)
		if err != nil || !has {
			return err
		}
		if on == "" {
			on = dev
		}
		h := Hop{Dev: on, Addr: a}
		if on == dev && !slices.Contains(hops, h) {
			hops = append(hops, h)
		}
		return nil
	}
	for _, r := range routes {
		if r.Type != "" && r.Type != "unicast" {
			continue
		}
		if err := add(r.Gateway, r.Via, r.Dev); err != nil {
			return nil, fmt.Errorf("parse ip route show dev %s: %w", dev, err)
		}
		for _, nh := range r.Nexthops {
			if err := add(nh.Gateway, nh.Via, nh.Dev); err != nil {
				return nil, fmt.Errorf("parse ip route show dev %s: %w", dev, err)
			}
		}
	}
	return hops, nil
}

// entry is one neighbour entry of `ip -j neigh show`.
type entry struct {
	Hop
	States      []string // e.g. ["REACHABLE"], ["PERMANENT"]
	Managed     bool     // NTF_MANAGED: the kernel keeps it resolved
	ExternLearn bool     // NTF_EXT_LEARNED: exempt from garbage collection
}

// operator reports whether the entry is one an operator made and xlb must
// leave alone: PERMANENT or NOARP.
func (e entry) operator() bool {
	return slices.Contains(e.States, "PERMANENT") || slices.Contains(e.States, "NOARP")
}

// parseNeigh reads the answer of `ip -j neigh show ...`. The answer omits
// "dev" when the command named one: dev fills it in ("" when it did not).
// Flags such as "managed" are keys with a null value, so the rows are read
// as maps to see which keys are there.
func parseNeigh(out []byte, dev string) ([]entry, error) {
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("parse ip neigh show: %w", err)
	}
	entries := make([]entry, 0, len(rows))
	for _, row := range rows {
		var dst, on string
		if err := json.Unmarshal(row["dst"], &dst); err != nil {
			return nil, fmt.Errorf("parse ip neigh show: dst: %w", err)
		}
		a, err := netip.ParseAddr(dst)
		if err != nil {
			return nil, fmt.Errorf("parse ip neigh show: dst %q: %w", dst, err)
		}
		on = dev
		if raw, has := row["dev"]; has {
			if err := json.Unmarshal(raw, &on); err != nil {
				return nil, fmt.Errorf("parse ip neigh show: dev: %w", err)
			}
		}
		e := entry{Hop: Hop{Dev: on, Addr: a.Unmap()}}
		if raw, has := row["state"]; has {
			if err := json.Unmarshal(raw, &e.States); err != nil {
				return nil, fmt.Errorf("parse ip neigh show %s: state: %w", dst, err)
			}
		}
		_, e.Managed = row["managed"]
		_, e.ExternLearn = row["extern_learn"]
		entries = append(entries, e)
	}
	return entries, nil
}

// parseLinks reads the answer of `ip -j link show`: interface names by
// index.
func parseLinks(out []byte) (map[int]string, error) {
	var links []struct {
		Ifindex int    `json:"ifindex"`
		Ifname  string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("parse ip link show: %w", err)
	}
	names := make(map[int]string, len(links))
	for _, l := range links {
		names[l.Ifindex] = l.Ifname
	}
	return names, nil
}
