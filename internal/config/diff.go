// SPDX-License-Identifier: Apache-2.0

package config

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Changes are what turns one Desired state into another. Applied in the
// order of the fields (settings, removals, additions, updates, then real
// lists), no service is ever left referring to something missing.
type Changes struct {
	// Remove lists services to delete.
	Remove []loadbalancer.ServiceKey
	// Add lists new services; each also has its reals in SetReals.
	Add []loadbalancer.Service
	// Update lists services whose scheduler, local IPs or table size
	// changed; their reals and connections stay.
	Update []loadbalancer.Service
	// SetReals holds the new real list of every added service and of
	// every service whose reals changed.
	SetReals map[loadbalancer.ServiceKey][]loadbalancer.Real
	// Settings are the new settings, nil if unchanged.
	Settings *loadbalancer.Settings
	// Renamed lists services whose name alone changed: the file's and
	// the API's, nothing of the data path (Renames).
	Renamed []Rename
	// Warnings are what the daemon found while applying that the
	// operator should know (a real whose next hop is unresolved); they
	// are not changes.
	Warnings []string
}

// Rename is a service of both configurations whose name changed.
type Rename struct {
	Key      loadbalancer.ServiceKey
	From, To string
}

// Renames lists the services of both old and new whose name changed, in
// the order of new. Services whose key does not parse are left out (the
// checks name them).
func Renames(old, new *Config) []Rename {
	if old == nil || new == nil {
		return nil
	}
	names := map[loadbalancer.ServiceKey]string{}
	for _, s := range old.Services {
		if k, ok := s.key(); ok {
			names[k] = s.Name
		}
	}
	var out []Rename
	for _, s := range new.Services {
		k, ok := s.key()
		if from, had := names[k]; ok && had && from != s.Name {
			out = append(out, Rename{Key: k, From: from, To: s.Name})
		}
	}
	return out
}

// key is the service's key, if its fields parse.
func (s Service) key() (loadbalancer.ServiceKey, bool) {
	vip, err := netip.ParseAddr(s.VIP)
	if err != nil || s.Port < 0 || s.Port > 65535 {
		return loadbalancer.ServiceKey{}, false
	}
	proto, err := loadbalancer.ParseProto(s.Protocol)
	if err != nil {
		return loadbalancer.ServiceKey{}, false
	}
	return loadbalancer.ServiceKey{VIP: vip, Port: uint16(s.Port), Proto: proto}, true
}

// Empty tells whether there is nothing to change.
func (c Changes) Empty() bool {
	return len(c.Remove) == 0 && len(c.Add) == 0 && len(c.Update) == 0 &&
		len(c.SetReals) == 0 && c.Settings == nil && len(c.Renamed) == 0
}

// String describes the changes for logs, one line per change, in the
// order they are applied; it is "" when there are none.
func (c Changes) String() string {
	var lines []string
	if s := c.Settings; s != nil {
		lines = append(lines, fmt.Sprintf(
			"set settings: tcp_syn %v, tcp %v, tcp_fin %v, tcp_close %v, udp %v, local ports %d-%d, fib cache ttl %v",
			s.TCPSynTimeout, s.TCPTimeout, s.TCPFinTimeout, s.TCPRstTimeout, s.UDPTimeout,
			s.LocalPortMin, s.LocalPortMax, s.FIBCacheTTL))
	}
	for _, k := range c.Remove {
		lines = append(lines, "remove service "+k.String())
	}
	for _, s := range c.Add {
		lines = append(lines, "add service "+describeService(s))
	}
	for _, s := range c.Update {
		lines = append(lines, "update service "+describeService(s))
	}
	for _, k := range sortedKeys(c.SetReals) {
		lines = append(lines, fmt.Sprintf("set reals of %s: %s", k, describeReals(c.SetReals[k])))
	}
	for _, r := range c.Renamed {
		lines = append(lines, fmt.Sprintf("rename service %s: %q -> %q", r.Key, r.From, r.To))
	}
	return strings.Join(lines, "\n")
}

// Brief is String for a log line: at most max lines, then how many more
// changes of each kind there are.
func (c Changes) Brief(max int) string {
	lines := strings.Split(c.String(), "\n")
	if len(lines) <= max {
		return c.String()
	}
	return fmt.Sprintf("%s\n... %d more (in all: %d services removed, %d added, %d updated, %d real lists set, %d renamed)",
		strings.Join(lines[:max], "\n"), len(lines)-max, len(c.Remove), len(c.Add), len(c.Update), len(c.SetReals), len(c.Renamed))
}

func describeService(s loadbalancer.Service) string {
	ips := make([]string, len(s.LocalIPs))
	for i, a := range s.LocalIPs {
		ips[i] = a.String()
	}
	lips := "local IPs " + strings.Join(ips, " ")
	if len(ips) == 0 {
		// allowed, as DPVS allows ipvsadm -A before --add-laddr
		lips = "no local IP: it forwards nothing until one is added"
	}
	out := fmt.Sprintf("%s (%s, %s", s.Key, s.Scheduler, lips)
	if s.MaglevSize != 0 {
		out += fmt.Sprintf(", table size %d", s.MaglevSize)
	}
	if s.Persistent != 0 {
		out += fmt.Sprintf(", persistent %d s", s.Persistent)
		if s.PersistPrefix != 0 {
			out += fmt.Sprintf(" per /%d", s.PersistPrefix)
		}
	}
	if s.ClientAddress != loadbalancer.ClientAddressNone {
		out += fmt.Sprintf(", client address %s", s.ClientAddress)
	}
	if s.SynProxy {
		out += ", SYN proxy"
	}
	if t := s.Timeouts; t != (loadbalancer.StateTimeouts{}) {
		out += fmt.Sprintf(", timeouts tcp_syn %v, tcp %v, tcp_fin %v, tcp_close %v, udp %v", t.Syn, t.Established, t.Fin, t.Close, t.UDP)
	}
	return out + ")"
}

func describeReals(reals []loadbalancer.Real) string {
	if len(reals) == 0 {
		return "none"
	}
	parts := make([]string, len(reals))
	for i, r := range reals {
		parts[i] = fmt.Sprintf("%s weight %d", r.AddrPort(), r.Weight)
	}
	return strings.Join(parts, ", ")
}

// Diff returns the changes that turn current into desired. A nil current
// is an empty data path: every desired service is added and the settings
// are set. A nil desired removes every service and leaves the settings.
// Services are compared by key: a key only in current is removed, one
// only in desired is added, and one in both is updated when its
// scheduler, local IPs (in any order) or table size differ. Real lists
// are compared regardless of order, by address, port and weight. Every
// list is sorted by the service key's string, so equal inputs give equal
// output.
func Diff(current, desired *Desired) Changes {
	if current == nil {
		current = &Desired{}
	}
	var c Changes
	if desired == nil {
		desired = &Desired{Settings: current.Settings}
	}
	if current.Settings != desired.Settings {
		s := desired.Settings
		c.Settings = &s
	}
	have := map[loadbalancer.ServiceKey]loadbalancer.Service{}
	for _, s := range current.Services {
		have[s.Key] = s
	}
	want := map[loadbalancer.ServiceKey]bool{}
	setReals := func(k loadbalancer.ServiceKey) {
		if c.SetReals == nil {
			c.SetReals = map[loadbalancer.ServiceKey][]loadbalancer.Real{}
		}
		c.SetReals[k] = append([]loadbalancer.Real{}, desired.Reals[k]...)
	}
	for _, s := range desired.Services {
		want[s.Key] = true
		old, ok := have[s.Key]
		if !ok {
			c.Add = append(c.Add, s)
			setReals(s.Key)
			continue
		}
		if !sameService(old, s) {
			c.Update = append(c.Update, s)
		}
		if !sameReals(current.Reals[s.Key], desired.Reals[s.Key]) {
			setReals(s.Key)
		}
	}
	for _, s := range current.Services {
		if !want[s.Key] {
			c.Remove = append(c.Remove, s.Key)
		}
	}
	slices.SortFunc(c.Remove, compareKeys)
	bySvcKey := func(a, b loadbalancer.Service) int { return compareKeys(a.Key, b.Key) }
	slices.SortFunc(c.Add, bySvcKey)
	slices.SortFunc(c.Update, bySvcKey)
	return c
}

func compareKeys(a, b loadbalancer.ServiceKey) int { return strings.Compare(a.String(), b.String()) }

// sortedKeys returns the keys of a SetReals map in Diff's order.
func sortedKeys(m map[loadbalancer.ServiceKey][]loadbalancer.Real) []loadbalancer.ServiceKey {
	keys := make([]loadbalancer.ServiceKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// sameService compares what UpdateService can change.
func sameService(a, b loadbalancer.Service) bool {
	if a.Scheduler != b.Scheduler || a.MaglevSize != b.MaglevSize || len(a.LocalIPs) != len(b.LocalIPs) ||
		a.Persistent != b.Persistent || a.PersistPrefix != b.PersistPrefix || a.Timeouts != b.Timeouts ||
		a.ClientAddress != b.ClientAddress || a.SynProxy != b.SynProxy {
		return false
	}
	x, y := slices.Clone(a.LocalIPs), slices.Clone(b.LocalIPs)
	slices.SortFunc(x, netip.Addr.Compare)
	slices.SortFunc(y, netip.Addr.Compare)
	return slices.Equal(x, y)
}

// sameReals compares real lists regardless of order.
func sameReals(a, b []loadbalancer.Real) bool {
	if len(a) != len(b) {
		return false
	}
	byAddr := func(x, y loadbalancer.Real) int {
		return cmp.Or(x.AddrPort().Compare(y.AddrPort()), cmp.Compare(x.Weight, y.Weight))
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, byAddr)
	slices.SortFunc(y, byAddr)
	return slices.Equal(x, y)
}
