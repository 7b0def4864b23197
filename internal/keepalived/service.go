// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// keepalivedPersistence is the persistence keepalived gives a
// persistence_timeout without a value, and a port-0 service without
// persistence (IPVS_SVC_PERSISTENT_TIMEOUT).
const keepalivedPersistence = 360

// target is one VIP and port that a virtual_server stands for.
type target struct {
	vip   netip.Addr
	port  int
	group bool // from a virtual_server_group
}

// vsConf is what a virtual_server's block says.
type vsConf struct {
	node       *Node
	targets    []target
	proto      string
	sched      string
	schedNode  *Node
	kind       string // lb_kind, upper case
	persistent int    // -1: not given
	netmask    string
	name       string
	nameNode   *Node
	weight     *int  // default weight of the reals
	lgroup     *Node // DPVS local_address_group
	params     checkParams
	reals      []*realConf
}

// realConf is what a real_server's block says.
type realConf struct {
	node      *Node
	addr      netip.Addr
	port      int // -1: not given
	checkPort int // the port a check reaches when it names none
	weight    *int
	params    checkParams
	checks    []*Node // checkers xlb has, in order
	others    bool    // has checkers xlb does not have
	differs   bool    // its check differs from the service's
}

// checkTypes are keepalived's checkers that xlb has, by xlb's type.
var checkTypes = map[string]string{"TCP_CHECK": "tcp", "HTTP_GET": "http", "SSL_GET": "https", "MISC_CHECK": "exec", "UDP_CHECK": "udp"}

// otherChecks are keepalived's checkers that xlb does not have.
var otherChecks = map[string]string{"DNS_CHECK": "DNS", "SMTP_CHECK": "SMTP", "BFD_CHECK": "BFD", "PING_CHECK": "ping", "FILE_CHECK": "file"}

// schedulers are IPVS's schedulers, true for those xlb has.
var schedulers = map[string]bool{"rr": true, "wrr": true, "lc": true, "wlc": true, "sh": true, "mh": true,
	"lblc": false, "lblcr": false, "dh": false, "sed": false, "nq": false, "fo": false, "ovf": false, "twos": false}

// virtualServer converts a virtual_server: one service per VIP and port
// it stands for.
func (c *converter) virtualServer(n *Node) {
	targets, ok := c.vsTargets(n)
	if !ok {
		return
	}
	if !n.HasBlock {
		c.skip(n, "a virtual_server needs a { } block with its reals")
		return
	}
	for _, s := range c.children(n) {
		if s.Keyword() == "protocol" && len(s.Args()) == 1 {
			switch p := strings.ToUpper(s.Args()[0]); p {
			case "TCP", "UDP":
			case "SCTP":
				c.skip(n, "xlb balances TCP and UDP only, not SCTP")
				return
			default:
				c.skip(n, fmt.Sprintf("%q is not a protocol (want TCP or UDP)", s.Args()[0]))
				return
			}
		}
	}
	c.mapped(n)
	vs := c.vsBody(n, targets)
	sched := c.scheduler(vs)
	if vs.proto == "" {
		vs.proto = "tcp"
		c.note(n, "no protocol: imported as tcp (keepalived 2.x takes udp, and warns)")
	}
	hc := c.serviceCheck(vs)
	if vs.nameNode != nil && len(targets) > 1 {
		c.note(vs.nameNode, fmt.Sprintf("a name is for one service and this virtual_server is %d", len(targets)))
	}
	for _, t := range targets {
		svc := config.Service{VIP: t.vip.String(), Port: t.port, Protocol: vs.proto, Scheduler: sched, Mode: "fullnat",
			Persistent: max(vs.persistent, 0), Netmask: vs.netmask, LocalIPs: c.localIPs(vs, t.vip), Reals: c.reals(vs, t)}
		if t.port == 0 && vs.persistent <= 0 {
			svc.Persistent = keepalivedPersistence // as keepalived does
		}
		if len(targets) == 1 {
			svc.Name = vs.name
		}
		if hc != nil {
			h := *hc
			svc.HealthCheck = &h
		}
		c.cfg.Services = append(c.cfg.Services, svc)
	}
}

// vsTargets returns the VIPs and ports of a virtual_server, or lists it.
func (c *converter) vsTargets(n *Node) ([]target, bool) {
	args := n.Args()
	switch {
	case len(args) == 0:
		c.skip(n, "a virtual_server needs an address")
		return nil, false
	case args[0] == "fwmark":
		c.skip(n, whyNoFwmark)
		return nil, false
	case args[0] == "group":
		g := c.groups[strings.Join(args[1:], " ")]
		if g == nil {
			c.skip(n, "no virtual_server_group of that name")
			return nil, false
		}
		ts := c.groupTargets(g)
		if len(ts) == 0 {
			c.skip(n, fmt.Sprintf("virtual_server_group %s has no address that xlb can serve", g.Args()[0]))
			return nil, false
		}
		return ts, true
	}
	vip, err := netip.ParseAddr(args[0])
	if err != nil {
		c.skip(n, fmt.Sprintf("%q is not an IP address (xlb does not resolve names)", args[0]))
		return nil, false
	}
	port := 0
	if len(args) > 1 {
		if port, err = parsePort(args[1]); err != nil {
			c.skip(n, err.Error())
			return nil, false
		}
	}
	if len(args) > 2 {
		c.skip(n, "want virtual_server ADDRESS [PORT]")
		return nil, false
	}
	return []target{{vip: vip, port: port}}, true
}

// groupTargets expands a virtual_server_group's entries, once.
func (c *converter) groupTargets(g *Node) []target {
	if ts, ok := c.targets[g]; ok {
		return ts
	}
	c.mapped(g)
	var ts []target
	for _, e := range c.children(g) {
		if e.Keyword() == "fwmark" {
			c.skip(e, whyNoFwmark)
			continue
		}
		if e.HasBlock || len(e.Words) > 2 {
			c.skip(e, "want ADDRESS [PORT] or ADDRESS-RANGE [PORT]")
			continue
		}
		addrs, err := parseRange(e.Keyword())
		if err != nil {
			c.skip(e, err.Error())
			continue
		}
		port := 0
		if len(e.Words) == 2 {
			if port, err = parsePort(e.Words[1]); err != nil {
				c.skip(e, err.Error())
				continue
			}
		}
		c.mapped(e)
		for _, a := range addrs {
			ts = append(ts, target{vip: a, port: port, group: true})
		}
	}
	c.targets[g] = ts
	return ts
}

// vsBody reads a virtual_server's block: its settings first, then its
// reals, which inherit the settings wherever they are written.
func (c *converter) vsBody(n *Node, targets []target) *vsConf {
	vs := &vsConf{node: n, targets: targets, persistent: -1}
	var reals []*Node
	for _, s := range c.children(n) {
		if s.Keyword() == "real_server" {
			reals = append(reals, s)
			continue
		}
		if ok, _ := c.checkParam(s, &vs.params, c.skip); ok {
			continue
		}
		c.vsSetting(vs, s)
	}
	for _, s := range reals {
		if r := c.realServer(s, vs); r != nil {
			vs.reals = append(vs.reals, r)
		}
	}
	return vs
}

// oneValue are the settings that take exactly one value.
var oneValue = map[string]bool{"protocol": true, "lb_algo": true, "lvs_sched": true, "persistence_granularity": true,
	"laddr_group_name": true, "snmp_name": true, "weight": true}

// vsSetting reads one statement of a virtual_server's block.
func (c *converter) vsSetting(vs *vsConf, s *Node) {
	args := s.Args()
	if oneValue[s.Keyword()] && len(args) != 1 {
		c.skip(s, fmt.Sprintf("want %s and one value", s.Keyword()))
		return
	}
	switch k := s.Keyword(); {
	case k == "protocol" && len(args) == 1:
		vs.proto = strings.ToLower(args[0]) // checked by virtualServer
		c.mapped(s)
	case (k == "lb_algo" || k == "lvs_sched") && len(args) == 1:
		vs.sched, vs.schedNode = strings.ToLower(args[0]), s
		c.mapped(s)
	case k == "lb_kind" || k == "lvs_method":
		vs.kind = c.lbKind(s)
	case k == "persistence_timeout" && len(args) == 0:
		vs.persistent = keepalivedPersistence
		c.mapped(s)
	case k == "persistence_timeout" && len(args) == 1:
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 0 {
			c.skip(s, fmt.Sprintf("%q is not a number of seconds", args[0]))
			return
		}
		vs.persistent = v
		c.mapped(s)
	case k == "persistence_granularity" && len(args) == 1:
		if !validMask(args[0]) {
			c.skip(s, fmt.Sprintf("%q is not a netmask or prefix length", args[0]))
			return
		}
		vs.netmask = args[0]
		c.mapped(s)
	case k == "laddr_group_name" && len(args) == 1:
		if vs.lgroup = c.lgroups[args[0]]; vs.lgroup == nil {
			c.skip(s, fmt.Sprintf("no local_address_group named %s: the local IPs come from --laddr", args[0]))
			return
		}
		c.mapped(s)
	case k == "snmp_name" && len(args) == 1:
		vs.name, vs.nameNode = args[0], s
		c.mapped(s)
	case k == "weight" && len(args) == 1:
		if w, ok := c.weight(s); ok {
			vs.weight = &w
		}
	case k == "inhibit_on_failure":
		c.mapped(s) // xlb takes a failed real out of scheduling and keeps its connections
	default:
		c.skip(s, otherWhy(k, vsWhy, "not a virtual_server setting xlb knows"))
	}
}

// lbKind reads a forwarding method: FullNAT is xlb's only one.
func (c *converter) lbKind(s *Node) string {
	if len(s.Args()) == 0 {
		c.skip(s, "want a forwarding method")
		return ""
	}
	kind := strings.ToUpper(s.Args()[0])
	switch kind {
	case "FNAT":
		c.mapped(s)
	case "NAT", "DR", "TUN":
		c.note(s, whyFullNAT)
	case "SNAT":
		c.skip(s, "xlb has no SNAT (outbound NAT): imported as FullNAT")
	default:
		c.skip(s, fmt.Sprintf("%q is not a forwarding method: imported as FullNAT", s.Args()[0]))
	}
	return kind
}

// weight reads a weight statement.
func (c *converter) weight(s *Node) (int, bool) {
	w, err := strconv.Atoi(s.Args()[0])
	if err != nil || w < 0 {
		c.skip(s, fmt.Sprintf("%q is not a weight", s.Args()[0]))
		return 0, false
	}
	c.mapped(s)
	return w, true
}

// realServer reads a real_server block.
func (c *converter) realServer(s *Node, vs *vsConf) *realConf {
	args := s.Args()
	if len(args) == 0 || len(args) > 2 {
		c.skip(s, "want real_server ADDRESS [PORT]")
		return nil
	}
	addr, err := netip.ParseAddr(args[0])
	if err != nil {
		c.skip(s, fmt.Sprintf("%q is not an IP address (xlb does not resolve names)", args[0]))
		return nil
	}
	r := &realConf{node: s, addr: addr, port: -1, weight: vs.weight, params: vs.params}
	if len(args) == 2 {
		if r.port, err = parsePort(args[1]); err != nil {
			c.skip(s, err.Error())
			return nil
		}
	}
	r.checkPort = max(r.port, 0)
	if r.port < 0 && len(vs.targets) == 1 {
		r.checkPort = vs.targets[0].port
	}
	c.mapped(s)
	for _, x := range c.children(s) {
		if ok, _ := c.checkParam(x, &r.params, c.skip); ok {
			continue
		}
		switch k := x.Keyword(); {
		case k == "weight" && len(x.Args()) != 1:
			c.skip(x, "want weight and one value")
		case k == "weight":
			if w, ok := c.weight(x); ok {
				r.weight = &w
			}
		case k == "inhibit_on_failure":
			c.mapped(x)
		case k == "lvs_method" || k == "lb_kind":
			c.lbKind(x)
		case checkTypes[k] != "" && x.HasBlock:
			r.checks = append(r.checks, x)
		case otherChecks[k] != "":
			c.skip(x, fmt.Sprintf("xlb has no %s check (its checks are tcp, http, https, udp and exec)", otherChecks[k]))
			r.others = true
		default:
			c.skip(x, otherWhy(k, realWhy, "not a real_server setting xlb knows"))
		}
	}
	return r
}

// scheduler maps lb_algo. keepalived's default is wlc.
func (c *converter) scheduler(vs *vsConf) string {
	if vs.schedNode == nil {
		return "wlc"
	}
	if schedulers[vs.sched] {
		return vs.sched
	}
	fb, reason := "rr", "the reals' weights are equal"
	for _, r := range vs.reals {
		if weightOf(r.weight) != weightOf(vs.reals[0].weight) {
			fb, reason = "wrr", "the reals' weights differ"
		}
	}
	what := fmt.Sprintf("xlb has no %s scheduler", vs.sched)
	if _, known := schedulers[vs.sched]; !known {
		what = fmt.Sprintf("%q is not an IPVS scheduler", vs.sched)
	}
	c.note(vs.schedNode, fmt.Sprintf("%s: %s used instead, as %s", what, fb, reason))
	return fb
}

// weightOf returns a weight, 1 when not given.
func weightOf(w *int) int {
	if w == nil {
		return 1
	}
	return *w
}

// reals returns a target's reals. A real without a port takes the
// virtual server's (a group's: 0, the client's destination port).
func (c *converter) reals(vs *vsConf, t target) []config.Real {
	var out []config.Real
	for _, r := range vs.reals {
		port := r.port
		switch {
		case port < 0 && t.group:
			port = 0
		case port < 0:
			port = t.port
		case (vs.kind == "DR" || vs.kind == "TUN") && port != t.port && t.port != 0:
			c.note(r.node, fmt.Sprintf("with lb_kind %s keepalived sends to the virtual server's port, %d; so does this import", vs.kind, t.port))
			port = t.port
		}
		real := config.Real{Address: r.addr.String(), Port: port}
		if r.weight != nil {
			w := *r.weight
			real.Weight = &w
		}
		out = append(out, real)
	}
	return out
}

// localIPs returns a service's local IPs: its DPVS local_address_group's,
// or those given for its VIP's family.
func (c *converter) localIPs(vs *vsConf, vip netip.Addr) []string {
	var ips []string
	if vs.lgroup != nil {
		for _, a := range c.groupAddrs(vs.lgroup) {
			if a.Is4() == vip.Is4() {
				ips = append(ips, a.String())
			}
		}
		if len(ips) == 0 {
			c.note(vs.node, fmt.Sprintf("local_address_group %s has no %s address: FullNAT needs a local IP", vs.lgroup.Args()[0], family(vip.Is4())))
		}
		return ips
	}
	ips = append(ips, c.laddrs[vip.Is4()]...)
	if len(ips) == 0 {
		c.note(vs.node, fmt.Sprintf("no %s local IP: FullNAT needs one: pass --laddr", family(vip.Is4())))
	}
	return ips
}

// groupAddrs reads a DPVS local_address_group once: lines of an address
// or range and, optionally, the DPDK device, which xlb does not need.
func (c *converter) groupAddrs(g *Node) []netip.Addr {
	if addrs, ok := c.lips[g]; ok {
		return addrs
	}
	c.mapped(g)
	var out []netip.Addr
	for _, e := range c.children(g) {
		if e.HasBlock || len(e.Words) > 2 {
			c.skip(e, "want ADDRESS [DEVICE] or ADDRESS-RANGE [DEVICE]")
			continue
		}
		addrs, err := parseRange(e.Keyword())
		if err != nil {
			c.skip(e, err.Error())
			continue
		}
		c.mapped(e)
		out = append(out, addrs...)
	}
	c.lips[g] = out
	return out
}

// parsePort reads a port.
func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return p, nil
}

// validMask tells whether s is a dotted IPv4 netmask or a prefix length.
func validMask(s string) bool {
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 0 && n <= 128
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	return v == 0 || (^v)&(^v+1) == 0 // the zeros are a suffix
}
