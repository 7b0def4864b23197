// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// ValidationError lists every problem of a configuration, each starting
// with the path of the field at fault.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "\n") }

// maxTimeout bounds timeouts (a year, in seconds).
const maxTimeout = 365 * 24 * 3600

// problems collects the problems of one validation.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

// parseAddr parses an address of a field, rejecting IPv4-mapped IPv6.
func (p *problems) parseAddr(path, s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		p.add(path, "%q is not an IP address", s)
		return a, false
	case a.Is4In6():
		p.add(path, "%s is an IPv4-mapped IPv6 address; write it as IPv4", s)
		return a, false
	case a.Zone() != "":
		p.add(path, "%s: zones are not supported", s)
		return a, false
	}
	return a, true
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// parsePortRange parses "A-B" with 1 <= A <= B <= 65535.
func parsePortRange(s string) (lo, hi uint16, err error) {
	a, b, ok := strings.Cut(s, "-")
	x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if !ok || err1 != nil || err2 != nil || x < 1 || y < x {
		return 0, 0, fmt.Errorf("%q: want FIRST-LAST with 1 <= FIRST <= LAST <= 65535", s)
	}
	return uint16(x), uint16(y), nil
}

// Validate checks the whole configuration and reports every problem.
func (c *Config) Validate() error {
	var p problems
	if len(c.Interfaces) == 0 {
		p.add("interfaces", "at least one interface is required")
	}
	for i, name := range c.Interfaces {
		if strings.TrimSpace(name) == "" || len(name) > 15 || strings.ContainsAny(name, "/ ") {
			p.add(fmt.Sprintf("interfaces[%d]", i), "%q is not an interface name", name)
		}
	}
	switch c.XDPMode {
	case "", "native", "generic":
	default:
		p.add("xdp_mode", "%q: want native or generic", c.XDPMode)
	}
	if t := c.Timeouts; t != nil {
		for name, v := range map[string]int{"tcp": t.TCP, "tcp_fin": t.TCPFin, "udp": t.UDP} {
			if v < 0 || v > maxTimeout {
				p.add("timeouts."+name, "%d: want 1 to %d seconds (0 keeps the default)", v, maxTimeout)
			}
		}
	}
	if c.LocalPortRange != "" {
		if _, _, err := parsePortRange(c.LocalPortRange); err != nil {
			p.add("local_port_range", "%v", err)
		}
	}
	keys := map[string]int{}
	names := map[string]int{}
	for i, s := range c.Services {
		path := fmt.Sprintf("services[%d]", i)
		key := s.validate(path, &p)
		if key != "" {
			if j, dup := keys[key]; dup {
				p.add(path, "duplicates services[%d] (%s)", j, key)
			} else {
				keys[key] = i
			}
		}
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				p.add(path+".name", "%q is also the name of services[%d]", s.Name, j)
			} else {
				names[s.Name] = i
			}
		}
	}
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

// validate checks one service and returns its key ("" when the key itself
// is invalid).
func (s *Service) validate(path string, p *problems) string {
	key := ""
	vip, vipOK := p.parseAddr(path+".vip", s.VIP)
	if s.Port < 0 || s.Port > 65535 {
		p.add(path+".port", "%d is not a port (0 to 65535; 0 = every port)", s.Port)
	}
	proto, err := datapath.ParseProto(s.Protocol)
	if err != nil {
		p.add(path+".protocol", "%q: want tcp or udp", s.Protocol)
	}
	if vipOK && err == nil && s.Port >= 0 && s.Port <= 65535 {
		key = fmt.Sprintf("%s %s", proto, netip.AddrPortFrom(vip, uint16(s.Port)))
	}
	switch s.Scheduler {
	case "", "rr", "wrr", "mh", "sh":
	case "lc", "wlc":
		p.add(path+".scheduler", "%q is not supported yet (rr, wrr, mh, sh are)", s.Scheduler)
	default:
		p.add(path+".scheduler", "unknown scheduler %q (want rr, wrr, mh or sh)", s.Scheduler)
	}
	switch s.Mode {
	case "", "fullnat":
	case "dr", "nat", "tunnel":
		p.add(path+".mode", "%q is not supported yet (fullnat is)", s.Mode)
	default:
		p.add(path+".mode", "unknown mode %q (want fullnat)", s.Mode)
	}
	if len(s.LocalIPs) == 0 {
		p.add(path+".local_ips", "fullnat needs at least one local IP")
	}
	if len(s.LocalIPs) > datapath.MaxServiceLocalIPs {
		p.add(path+".local_ips", "%d local IPs: at most %d", len(s.LocalIPs), datapath.MaxServiceLocalIPs)
	}
	seen := map[netip.Addr]int{}
	for j, l := range s.LocalIPs {
		lp := fmt.Sprintf("%s.local_ips[%d]", path, j)
		a, ok := p.parseAddr(lp, l)
		switch {
		case !ok:
		case vipOK && a.Is4() != vip.Is4():
			p.add(lp, "%s is %s but the VIP %s is %s", a, family(a), vip, family(vip))
		default:
			if k, dup := seen[a]; dup {
				p.add(lp, "%s is also local_ips[%d]", a, k)
			}
			seen[a] = j
		}
	}
	reals := map[netip.AddrPort]int{}
	for j, r := range s.Reals {
		rp := fmt.Sprintf("%s.reals[%d]", path, j)
		a, ok := p.parseAddr(rp+".address", r.Address)
		if ok && vipOK && a.Is4() != vip.Is4() {
			p.add(rp+".address", "%s is %s but the VIP %s is %s", a, family(a), vip, family(vip))
		}
		if r.Port < 0 || r.Port > 65535 {
			p.add(rp+".port", "%d is not a port (0 to 65535)", r.Port)
		} else if s.Port == 0 && r.Port != 0 {
			p.add(rp+".port", "%d: a port-0 service keeps the client's port, so its reals have port 0", r.Port)
		}
		if r.Weight != nil && (*r.Weight < 0 || *r.Weight > datapath.MaxWeight) {
			p.add(rp+".weight", "%d: want 0 to %d (0 drains)", *r.Weight, datapath.MaxWeight)
		}
		if ok && r.Port >= 0 && r.Port <= 65535 {
			ap := netip.AddrPortFrom(a, uint16(r.Port))
			if k, dup := reals[ap]; dup {
				p.add(rp, "%s is also reals[%d]", ap, k)
			}
			reals[ap] = j
		}
	}
	return key
}
