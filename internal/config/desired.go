// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// Desired is a validated configuration in the data path's terms.
type Desired struct {
	Interfaces []string
	Mode       datapath.AttachMode
	Settings   datapath.Settings
	Services   []datapath.Service
	Reals      map[datapath.ServiceKey][]datapath.Real
}

// Desired validates the configuration and converts it.
func (c *Config) Desired() (*Desired, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := &Desired{
		Interfaces: slices.Clone(c.Interfaces),
		Settings:   datapath.DefaultSettings(),
		Reals:      map[datapath.ServiceKey][]datapath.Real{},
	}
	if c.XDPMode == "generic" {
		d.Mode = datapath.ModeGeneric
	}
	if t := c.Timeouts; t != nil {
		set := func(dst *time.Duration, secs int) {
			if secs > 0 {
				*dst = time.Duration(secs) * time.Second
			}
		}
		set(&d.Settings.TCPTimeout, t.TCP)
		set(&d.Settings.TCPFinTimeout, t.TCPFin)
		set(&d.Settings.UDPTimeout, t.UDP)
	}
	if c.LocalPortRange != "" {
		d.Settings.LocalPortMin, d.Settings.LocalPortMax, _ = parsePortRange(c.LocalPortRange)
	}
	for _, s := range c.Services {
		proto, _ := datapath.ParseProto(s.Protocol)
		sched := datapath.RoundRobin
		if s.Scheduler != "" {
			sched, _ = datapath.ParseScheduler(s.Scheduler)
		}
		svc := datapath.Service{
			Key:       datapath.ServiceKey{VIP: netip.MustParseAddr(s.VIP), Port: uint16(s.Port), Proto: proto},
			Scheduler: sched,
		}
		for _, l := range s.LocalIPs {
			svc.LocalIPs = append(svc.LocalIPs, netip.MustParseAddr(l))
		}
		reals := []datapath.Real{}
		for _, r := range s.Reals {
			w := 1
			if r.Weight != nil {
				w = *r.Weight
			}
			reals = append(reals, datapath.Real{Addr: netip.MustParseAddr(r.Address), Port: uint16(r.Port), Weight: uint32(w)})
		}
		d.Services = append(d.Services, svc)
		d.Reals[svc.Key] = reals
	}
	return d, nil
}

// Changes are what applying a configuration over another does.
type Changes struct {
	Remove   []datapath.ServiceKey
	Add      []datapath.Service
	Update   []datapath.Service
	SetReals map[datapath.ServiceKey][]datapath.Real
	Settings *datapath.Settings // nil: unchanged
}

// Empty tells whether there is nothing to do.
func (c Changes) Empty() bool {
	return len(c.Remove) == 0 && len(c.Add) == 0 && len(c.Update) == 0 && len(c.SetReals) == 0 && c.Settings == nil
}

func keyString(k datapath.ServiceKey) string { return k.String() }

// String describes the changes, one per line.
func (c Changes) String() string {
	var b strings.Builder
	if c.Settings != nil {
		fmt.Fprintf(&b, "settings: %+v\n", *c.Settings)
	}
	for _, k := range c.Remove {
		fmt.Fprintf(&b, "remove service %s\n", k)
	}
	for _, s := range c.Add {
		fmt.Fprintf(&b, "add service %s (%s, local IPs %v)\n", s.Key, s.Scheduler, s.LocalIPs)
	}
	for _, s := range c.Update {
		fmt.Fprintf(&b, "update service %s (%s, local IPs %v)\n", s.Key, s.Scheduler, s.LocalIPs)
	}
	keys := make([]datapath.ServiceKey, 0, len(c.SetReals))
	for k := range c.SetReals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b datapath.ServiceKey) int { return strings.Compare(keyString(a), keyString(b)) })
	for _, k := range keys {
		var reals []string
		for _, r := range c.SetReals[k] {
			reals = append(reals, fmt.Sprintf("%s w%d", r.AddrPort(), r.Weight))
		}
		fmt.Fprintf(&b, "set reals of %s: [%s]\n", k, strings.Join(reals, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func sameService(a, b datapath.Service) bool {
	return a.Key == b.Key && a.Scheduler == b.Scheduler && a.MaglevSize == b.MaglevSize && slices.Equal(a.LocalIPs, b.LocalIPs)
}

// sameReals compares real lists regardless of order.
func sameReals(a, b []datapath.Real) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(r datapath.Real) string { return fmt.Sprintf("%s/%d", r.AddrPort(), r.Weight) }
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i], bs[i] = key(a[i]), key(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// Diff returns what turns current (nil = nothing) into desired.
func Diff(current, desired *Desired) Changes {
	if current == nil {
		current = &Desired{Settings: desired.Settings}
	}
	c := Changes{SetReals: map[datapath.ServiceKey][]datapath.Real{}}
	if current.Settings != desired.Settings {
		s := desired.Settings
		c.Settings = &s
	}
	cur := map[datapath.ServiceKey]datapath.Service{}
	for _, s := range current.Services {
		cur[s.Key] = s
	}
	want := map[datapath.ServiceKey]bool{}
	for _, s := range desired.Services {
		want[s.Key] = true
		old, ok := cur[s.Key]
		switch {
		case !ok:
			c.Add = append(c.Add, s)
			c.SetReals[s.Key] = desired.Reals[s.Key]
			continue
		case !sameService(old, s):
			c.Update = append(c.Update, s)
		}
		if !sameReals(current.Reals[s.Key], desired.Reals[s.Key]) {
			c.SetReals[s.Key] = desired.Reals[s.Key]
		}
	}
	for _, s := range current.Services {
		if !want[s.Key] {
			c.Remove = append(c.Remove, s.Key)
		}
	}
	byKey := func(a, b datapath.Service) int { return strings.Compare(keyString(a.Key), keyString(b.Key)) }
	slices.SortFunc(c.Add, byKey)
	slices.SortFunc(c.Update, byKey)
	slices.SortFunc(c.Remove, func(a, b datapath.ServiceKey) int { return strings.Compare(keyString(a), keyString(b)) })
	if len(c.SetReals) == 0 {
		c.SetReals = nil
	}
	return c
}
