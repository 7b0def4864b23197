// SPDX-License-Identifier: Apache-2.0

package config

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// MaxTimeout is the largest timeout a configuration can set, in seconds
// (a year).
const MaxTimeout = 365 * 24 * 60 * 60

// maxIfNameLen is the longest interface name Linux accepts (IFNAMSIZ-1).
const maxIfNameLen = 15

// Validate checks the whole configuration and returns a *ValidationError
// listing every problem, or nil.
func (c *Config) Validate() error {
	_, err := c.check(Env{})
	return err
}

// checker collects the problems of one validation.
type checker struct {
	problems []string
	kinds    []error // the named errors of the problems, each once
	exec     execDefaults
}

func (ch *checker) addf(path, format string, args ...any) {
	ch.problems = append(ch.problems, path+": "+fmt.Sprintf(format, args...))
}

// kindf adds a problem of a named kind (ErrCapacity, ...), so that
// errors.Is tells it apart.
func (ch *checker) kindf(kind error, path, format string, args ...any) {
	ch.addf(path, format, args...)
	if !slices.Contains(ch.kinds, kind) {
		ch.kinds = append(ch.kinds, kind)
	}
}

// err returns the problems as a *ValidationError, or nil.
func (ch *checker) err() error {
	if len(ch.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: ch.problems, kinds: ch.kinds}
}

// check validates c, against env too, and, when it is valid, converts
// it. Validation and conversion are one pass so that they cannot
// disagree.
func (c *Config) check(env Env) (*Desired, error) {
	ch := &checker{}
	d := &Desired{
		Settings: loadbalancer.DefaultSettings(),
		Reals:    map[loadbalancer.ServiceKey][]loadbalancer.Real{},
		Health:   map[loadbalancer.ServiceKey]HealthCheck{},
	}
	ch.interfaces(c.Interfaces)
	d.Interfaces = append([]string(nil), c.Interfaces...)
	switch c.XDPMode {
	case "", "native":
		d.Mode = loadbalancer.ModeNative
	case "generic":
		d.Mode = loadbalancer.ModeGeneric
	default:
		ch.addf("xdp_mode", "%q is not an XDP mode (want native or generic)", c.XDPMode)
	}
	d.Workers = ch.workers(c.Workers, d.Mode)
	ch.timeouts("timeouts", c.Timeouts, &d.Settings)
	d.ConnTable = ch.connTable(c.ConnTable, env.Limits.ConnTable)
	d.ServiceCapacity = ch.mapCapacity(serviceCapacity, c.MaxServices, env.Limits.Services)
	d.RealCapacity = ch.mapCapacity(realCapacity, c.MaxReals, env.Limits.Reals)
	d.LocalIPCapacity = ch.mapCapacity(localIPCapacity, c.MaxLocalIPs, env.Limits.LocalIPs)
	if env.Limits.LocalIPs == 0 {
		env.Limits.LocalIPs = d.LocalIPCapacity // what a data path loaded for this file holds
	}
	if c.LocalPortRange != "" {
		lo, hi, ok := parsePortRange(c.LocalPortRange)
		if !ok {
			ch.kindf(ErrOutOfRange, "local_port_range", "%q is not FIRST-LAST with 1 <= FIRST <= LAST <= 65535", c.LocalPortRange)
		}
		d.Settings.LocalPortMin, d.Settings.LocalPortMax = lo, hi
	}
	ch.execChecks(c.ExecChecks, d)
	d.Node = ch.node(c.Node)
	ch.cluster(c.Cluster, c.Node, d)
	ch.services(c.Services, d)
	vips := vipsOf(c.Services)
	ch.notVIPs(c.Services, vips)
	ch.hostAddrs(c.Services, env.HostOwns)
	ch.nodeLocalIPs(d, vips, env.HostOwns)
	ch.clusterChecks(c, d)
	ch.bgpFamilies(d)
	laddrs := d.Node.LocalIPs
	if d.Cluster != nil {
		laddrs = append(slices.Clone(laddrs), d.Cluster.PeerLocalIPs()...)
	}
	ch.capacity(c.Services, laddrs, env)
	if err := ch.err(); err != nil {
		return nil, err
	}
	return d, nil
}

func (ch *checker) interfaces(names []string) {
	if len(names) == 0 {
		ch.addf("interfaces", "at least one interface is required")
	}
	seen := map[string]int{}
	for i, name := range names {
		path := fmt.Sprintf("interfaces[%d]", i)
		if why := badIfName(name); why != "" {
			ch.addf(path, "%q is not an interface name: %s", name, why)
			continue
		}
		if j, dup := seen[name]; dup {
			ch.addf(path, "%q is also interfaces[%d]", name, j)
			continue
		}
		seen[name] = i
	}
}

// badIfName says what is wrong with an interface name, by the kernel's
// rules (dev_valid_name), or returns "".
func badIfName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxIfNameLen:
		return fmt.Sprintf("longer than %d bytes", maxIfNameLen)
	case name == "." || name == "..":
		return "reserved"
	case strings.ContainsFunc(name, func(r rune) bool { return r == '/' || r == ':' || unicode.IsSpace(r) }):
		return "contains '/', ':' or a space"
	}
	return ""
}

// TimeoutSettings returns the data path's default settings with the
// timeouts c sets; a value out of range is left at its default (Validate
// reports it). Nil c gives the defaults.
func (c *Config) TimeoutSettings() loadbalancer.Settings {
	s := loadbalancer.DefaultSettings()
	if c != nil {
		(&checker{}).timeouts("timeouts", c.Timeouts, &s)
	}
	return s
}

// timeouts checks the timeouts at path (the top level's or a service's)
// and sets them on s, which holds what they start from.
func (ch *checker) timeouts(path string, t *Timeouts, s *loadbalancer.Settings) {
	if t == nil {
		return
	}
	if t.Profile != "" {
		p, ok := loadbalancer.TimeoutProfile(t.Profile)
		if !ok {
			ch.addf(path+".profile", "%q is not a set of timeouts (want one of %s)", t.Profile,
				strings.Join(loadbalancer.TimeoutProfileNames(), ", "))
		}
		if !ok {
			p, _ = loadbalancer.TimeoutProfile(loadbalancer.TimeoutsXLB)
		}
		s.SetStateTimeouts(p)
	}
	for _, f := range []struct {
		name string
		secs int
		key  timeoutKeys
		dst  *time.Duration
	}{
		{"tcp", t.TCP, givenTCP, &s.TCPTimeout},
		{"tcp_syn", t.TCPSyn, givenTCPSyn, &s.TCPSynTimeout},
		{"tcp_fin", t.TCPFin, givenTCPFin, &s.TCPFinTimeout},
		{"tcp_close", t.TCPClose, givenTCPClose, &s.TCPRstTimeout},
		{"udp", t.UDP, givenUDP, &s.UDPTimeout},
	} {
		switch {
		case f.secs == 0 && t.given&f.key == 0: // not set: the default stays
		case f.secs <= 0 || f.secs > MaxTimeout:
			ch.kindf(ErrOutOfRange, path+"."+f.name, "%d is out of range (want 1 to %d seconds)", f.secs, MaxTimeout)
		default:
			*f.dst = time.Duration(f.secs) * time.Second
		}
	}
}

// connTable checks the connection tables' sizes and fills in the
// defaults. A running data path's tables (running, zero when there is
// none) keep their size: another one is refused.
func (ch *checker) connTable(t *ConnTable, running loadbalancer.ConnTableSizes) loadbalancer.ConnTableSizes {
	out := loadbalancer.DefaultConnTableSizes()
	if t != nil {
		ch.connTableSizes(t, &out)
	}
	if running != (loadbalancer.ConnTableSizes{}) && out != running {
		ch.addf("conn_table", "ipv4 %d, ipv6 %d: the running tables hold %d IPv4 and %d IPv6 connections and keep their size "+
			"while the daemon runs; resizing takes a restart with --drop-incompatible-maps, which resets the connections they hold "+
			"(docs/config.md, conn_table)", out.IPv4, out.IPv6, running.IPv4, running.IPv6)
	}
	return out
}

// workers checks the workers section: CPUs each once, a queue in range,
// native mode. The machine's CPU count is checked when the data path
// loads.
func (ch *checker) workers(w *Workers, mode loadbalancer.AttachMode) loadbalancer.Workers {
	if w == nil {
		return loadbalancer.Workers{}
	}
	out := loadbalancer.Workers{CPUs: append([]int(nil), w.CPUs...), Queue: w.Queue}
	if len(w.CPUs) == 0 {
		ch.addf("workers.cpus", "is empty: give the worker CPUs, or leave workers out")
	}
	if err := out.Check(0); err != nil {
		ch.addf("workers", "%v", err)
	}
	if mode == loadbalancer.ModeGeneric {
		ch.addf("workers", "take native XDP; with xdp_mode: generic leave workers out")
	}
	return out
}

// capacityKey is a setting that sizes the maps indexed by some id.
type capacityKey struct {
	key, what        string
	def, least, most int
}

var (
	serviceCapacity = capacityKey{"max_services", "services",
		loadbalancer.DefaultServiceCapacity, loadbalancer.MinServiceCapacity, loadbalancer.MaxServiceCapacity}
	realCapacity = capacityKey{"max_reals", "reals",
		loadbalancer.DefaultRealCapacity, loadbalancer.MinRealCapacity, loadbalancer.MaxRealCapacity}
	localIPCapacity = capacityKey{"max_local_ips", "local IPs",
		loadbalancer.DefaultLocalIPCapacity, loadbalancer.MinLocalIPCapacity, loadbalancer.MaxLocalIPCapacity}
)

// mapCapacity checks the file's value n of k against its range and
// against what the running data path holds (running; 0: none runs). Left
// out, it is what runs, or the default.
func (ch *checker) mapCapacity(k capacityKey, n, running int) int {
	out := k.def
	switch {
	case n == 0:
		return cmp.Or(running, out)
	case n < k.least || n > k.most:
		ch.kindf(ErrOutOfRange, k.key, "%d is out of range (want %d to %d %s, or 0 for the default %d)",
			n, k.least, k.most, k.what, out)
		return out
	}
	out = n
	if running != 0 && out != running {
		ch.addf(k.key, "%d: the running data path holds %d %s and keeps that capacity while the daemon "+
			"runs; changing it takes a restart with --drop-incompatible-maps, which replaces every pinned map and resets "+
			"every connection (docs/config.md, %s)", out, running, k.what, k.key)
	}
	return out
}

// connTableSizes checks the sizes the file gives and writes them to out.
func (ch *checker) connTableSizes(t *ConnTable, out *loadbalancer.ConnTableSizes) {
	for _, f := range []struct {
		name string
		n    int
		dst  *uint32
	}{{"ipv4", t.IPv4, &out.IPv4}, {"ipv6", t.IPv6, &out.IPv6}} {
		switch {
		case f.n == 0:
		case f.n < loadbalancer.MinConnTableSize || f.n > loadbalancer.MaxConnTableSize:
			ch.kindf(ErrOutOfRange, "conn_table."+f.name, "%d is out of range (want %d to %d connections, or 0 for the default %d)",
				f.n, loadbalancer.MinConnTableSize, loadbalancer.MaxConnTableSize, *f.dst)
		default:
			*f.dst = uint32(f.n)
		}
	}
}

// parsePortRange parses "FIRST-LAST" with 1 <= FIRST <= LAST <= 65535.
func parsePortRange(s string) (lo, hi uint16, ok bool) {
	a, b, found := strings.Cut(s, "-")
	x, errA := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	y, errB := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if !found || errA != nil || errB != nil || x < 1 || y < x {
		return 0, 0, false
	}
	return uint16(x), uint16(y), true
}

// port checks a port field.
func (ch *checker) port(path string, p int, hint string) (uint16, bool) {
	if p < 0 || p > 65535 {
		ch.kindf(ErrOutOfRange, path, "%d is not a port (want 0 to 65535; %s)", p, hint)
		return 0, false
	}
	return uint16(p), true
}

// sameFamily reports a field whose address is not of the VIP's family.
func (ch *checker) sameFamily(path string, a, vip netip.Addr) bool {
	if a.Is4() == vip.Is4() {
		return true
	}
	ch.addf(path, "%s is %s but the VIP %s is %s", a, family(a), vip, family(vip))
	return false
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// unsupportedSchedulers are ipvsadm schedulers xlb does not have yet.
var unsupportedSchedulers = []string{"lblc", "lblcr", "dh", "sed", "nq", "fo", "ovf", "twos"}

// unsupportedModes are ipvsadm forwarding methods xlb does not have yet.
var unsupportedModes = []string{"dr", "nat", "tunnel"}

func (ch *checker) services(svcs []Service, d *Desired) {
	keys := map[loadbalancer.ServiceKey]int{}
	names := map[string]int{}
	for i := range svcs {
		s := &svcs[i]
		path := fmt.Sprintf("services[%d]", i)
		svc, keyOK := ch.service(path, s)
		if s.Timeouts != nil {
			// the service's own start from the global ones
			own := d.Settings
			ch.timeouts(path+".timeouts", s.Timeouts, &own)
			svc.Timeouts = own.StateTimeouts()
		}
		reals := ch.reals(path, s, svc.Key.VIP)
		hc := ch.healthCheck(path, s.HealthCheck)
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				ch.addf(path+".name", "%q is also the name of services[%d]", s.Name, j)
			} else {
				names[s.Name] = i
			}
		}
		if !keyOK {
			continue
		}
		if j, dup := keys[svc.Key]; dup {
			ch.addf(path, "duplicates services[%d] (%s)", j, svc.Key)
			continue
		}
		keys[svc.Key] = i
		ch.table(path, svc, reals)
		ch.vipCommunities(path, s, svc.Key.VIP, d)
		d.Services = append(d.Services, svc)
		d.Reals[svc.Key] = reals
		if hc != nil {
			d.Health[svc.Key] = *hc
		}
	}
}

// service checks a service's own fields; keyOK tells whether its VIP,
// port and protocol are valid.
func (ch *checker) service(path string, s *Service) (svc loadbalancer.Service, keyOK bool) {
	vip, vipOK := ch.addr(path+".vip", s.VIP, roleVIP)
	port, portOK := ch.port(path+".port", s.Port, "0 = every port of the VIP")
	proto, err := loadbalancer.ParseProto(s.Protocol)
	protoOK := err == nil
	if !protoOK {
		ch.addf(path+".protocol", "%q is not a protocol (want tcp or udp)", s.Protocol)
	}
	svc.Key = loadbalancer.ServiceKey{VIP: vip, Port: port, Proto: proto}

	switch {
	case s.Scheduler == "":
		svc.Scheduler = loadbalancer.RoundRobin
	case slices.Contains(unsupportedSchedulers, s.Scheduler):
		ch.addf(path+".scheduler", "%q is not supported yet (rr, wrr, mh, sh, lc and wlc are)", s.Scheduler)
	default:
		if svc.Scheduler, err = loadbalancer.ParseScheduler(s.Scheduler); err != nil {
			ch.addf(path+".scheduler", "unknown scheduler %q (want rr, wrr, mh, sh, lc or wlc)", s.Scheduler)
		}
	}
	ch.persistence(path, s, vip, &svc)
	ch.clientAddress(path, s, proto, protoOK, &svc)

	switch {
	case s.Mode == "" || s.Mode == "fullnat":
	case slices.Contains(unsupportedModes, s.Mode):
		ch.addf(path+".mode", "%q is not supported yet (fullnat is)", s.Mode)
	default:
		ch.addf(path+".mode", "unknown mode %q (want fullnat)", s.Mode)
	}

	// no local IP is allowed, as DPVS allows a service before its
	// local addresses: it forwards nothing until one is added
	seen := map[netip.Addr]int{}
	n := 0
	for j, entry := range s.LocalIPs {
		lp := fmt.Sprintf("%s.local_ips[%d]", path, j)
		addrs, isRange, err := expandRange(entry)
		switch {
		case err != nil:
			ch.addf(lp, "%v", err)
			continue
		case !isRange:
			addrs = []string{entry}
		}
		n += len(addrs)
		for _, l := range addrs {
			a, ok := ch.addr(lp, l, roleLocalIP)
			if !ok || (vipOK && !ch.sameFamily(lp, a, vip)) {
				continue
			}
			if k, dup := seen[a]; dup {
				ch.addf(lp, "%s is also local_ips[%d]", a, k)
				continue
			}
			seen[a] = j
			svc.LocalIPs = append(svc.LocalIPs, a)
		}
	}
	if n > loadbalancer.MaxServiceLocalIPs {
		ch.kindf(ErrCapacity, path+".local_ips", "%d local IPs; a service has at most %d (XLB_MAX_SVC_LADDRS)", n, loadbalancer.MaxServiceLocalIPs)
	}
	return svc, vipOK && portOK && protoOK
}

// reals checks and converts a service's reals. Family checks need the
// VIP, so they are skipped when it is invalid (the zero Addr).
func (ch *checker) reals(path string, s *Service, vip netip.Addr) []loadbalancer.Real {
	out := make([]loadbalancer.Real, 0, len(s.Reals))
	seen := map[netip.AddrPort]int{}
	for j, r := range s.Reals {
		rp := fmt.Sprintf("%s.reals[%d]", path, j)
		a, addrOK := ch.addr(rp+".address", r.Address, roleReal)
		if addrOK && vip.IsValid() {
			addrOK = ch.sameFamily(rp+".address", a, vip)
		}
		port, portOK := ch.port(rp+".port", r.Port, "0 keeps the client's port")
		if portOK && s.Port == 0 && port != 0 {
			ch.addf(rp+".port", "%d: a port-0 service keeps the client's port, so its reals need port 0", port)
		}
		weight := 1
		if r.Weight != nil {
			weight = *r.Weight
		}
		if weight < 0 || weight > loadbalancer.MaxWeight {
			ch.kindf(ErrOutOfRange, rp+".weight", "%d is out of range (want 0 to %d; 0 drains)", weight, loadbalancer.MaxWeight)
		}
		if !addrOK || !portOK {
			continue
		}
		ap := netip.AddrPortFrom(a, port)
		if k, dup := seen[ap]; dup {
			ch.addf(rp, "%s is also reals[%d]", ap, k)
			continue
		}
		seen[ap] = j
		out = append(out, loadbalancer.Real{Addr: a, Port: port, Weight: uint32(weight)})
	}
	return out
}
