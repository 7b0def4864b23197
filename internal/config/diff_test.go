// SPDX-License-Identifier: Apache-2.0

package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// twoServices is the base of the Diff tests: a web and a DNS service.
const twoServices = `interfaces: [eth0]
services:
  - name: web
    vip: 10.0.0.1
    port: 80
    protocol: tcp
    scheduler: rr
    local_ips: [10.0.2.254, 10.0.2.253]
    reals:
      - {address: 10.0.2.1, port: 8080, weight: 1}
      - {address: 10.0.2.2, port: 8080, weight: 1}
  - name: dns
    vip: 10.0.0.1
    port: 53
    protocol: udp
    local_ips: [10.0.2.254]
    reals:
      - {address: 10.0.2.1, port: 53}
`

func desired(t *testing.T, yaml string) *Desired {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Desired()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// edit returns twoServices with old replaced by new.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(twoServices, old) {
		t.Fatalf("the base configuration has no %q", old)
	}
	return strings.Replace(twoServices, old, new, 1)
}

func TestDiff(t *testing.T) {
	base := desired(t, twoServices)
	web := base.Services[0].Key
	dns := base.Services[1].Key
	for _, tc := range []struct {
		name string
		from *Desired
		to   string
		want string // Changes.String()
	}{
		{"nothing to everything", nil, twoServices, strings.Join([]string{
			"set settings: tcp_syn 30s, tcp 15m0s, tcp_fin 7s, tcp_close 3s, udp 5m0s, local ports 1025-65535, fib cache ttl 1s",
			"add service tcp 10.0.0.1:80 (rr, local IPs 10.0.2.254 10.0.2.253)",
			"add service udp 10.0.0.1:53 (rr, local IPs 10.0.2.254)",
			"set reals of tcp 10.0.0.1:80: 10.0.2.1:8080 weight 1, 10.0.2.2:8080 weight 1",
			"set reals of udp 10.0.0.1:53: 10.0.2.1:53 weight 1",
		}, "\n")},
		{"identical", base, twoServices, ""},
		{"reals reordered", base, edit(t, "10.0.2.1, port: 8080, weight: 1}\n      - {address: 10.0.2.2,",
			"10.0.2.2, port: 8080, weight: 1}\n      - {address: 10.0.2.1,"), ""},
		{"local IPs reordered", base, edit(t, "[10.0.2.254, 10.0.2.253]", "[10.0.2.253, 10.0.2.254]"), ""},
		{"weight changed", base, edit(t, "port: 8080, weight: 1}\n      - {address: 10.0.2.2, port: 8080, weight: 1}",
			"port: 8080, weight: 1}\n      - {address: 10.0.2.2, port: 8080, weight: 0}"),
			"set reals of tcp 10.0.0.1:80: 10.0.2.1:8080 weight 1, 10.0.2.2:8080 weight 0"},
		{"real added", base, edit(t, "{address: 10.0.2.1, port: 53}", "{address: 10.0.2.1, port: 53}\n      - {address: 10.0.2.2, port: 53}"),
			"set reals of udp 10.0.0.1:53: 10.0.2.1:53 weight 1, 10.0.2.2:53 weight 1"},
		{"reals removed", base, edit(t, "    reals:\n      - {address: 10.0.2.1, port: 53}\n", ""),
			"set reals of udp 10.0.0.1:53: none"},
		{"scheduler changed", base, edit(t, "scheduler: rr", "scheduler: mh"),
			"update service tcp 10.0.0.1:80 (mh, local IPs 10.0.2.254 10.0.2.253)"},
		{"local IP added", base, edit(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.2.254, 10.0.2.252]"),
			"update service udp 10.0.0.1:53 (rr, local IPs 10.0.2.254 10.0.2.252)"},
		{"service removed", base, edit(t, "  - name: dns\n    vip: 10.0.0.1\n    port: 53\n    protocol: udp\n    local_ips: [10.0.2.254]\n    reals:\n      - {address: 10.0.2.1, port: 53}\n", ""),
			"remove service udp 10.0.0.1:53"},
		{"service added without reals", base, twoServices + "  - {vip: 10.0.0.1, port: 443, protocol: tcp, local_ips: [10.0.2.254]}\n",
			"add service tcp 10.0.0.1:443 (rr, local IPs 10.0.2.254)\nset reals of tcp 10.0.0.1:443: none"},
		{"protocol changed", base, edit(t, "protocol: udp", "protocol: tcp"),
			"remove service udp 10.0.0.1:53\nadd service tcp 10.0.0.1:53 (rr, local IPs 10.0.2.254)\nset reals of tcp 10.0.0.1:53: 10.0.2.1:53 weight 1"},
		{"service timeouts given", base, edit(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.2.254]\n    timeouts: {udp: 20}"),
			"update service udp 10.0.0.1:53 (rr, local IPs 10.0.2.254, timeouts tcp_syn 30s, tcp 15m0s, tcp_fin 7s, tcp_close 3s, udp 20s)"},
		{"timeout changed", base, twoServices + "timeouts: {udp: 60}\n",
			"set settings: tcp_syn 30s, tcp 15m0s, tcp_fin 7s, tcp_close 3s, udp 1m0s, local ports 1025-65535, fib cache ttl 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Diff(tc.from, desired(t, tc.to))
			if got := c.String(); got != tc.want {
				t.Errorf("changes:\n%s\nwant:\n%s", got, tc.want)
			}
			if c.Empty() != (tc.want == "") {
				t.Errorf("Empty() = %v with changes %q", c.Empty(), c)
			}
		})
	}

	// a weight change sets the reals of that service and does nothing else
	c := Diff(base, desired(t, edit(t, "port: 8080, weight: 1}", "port: 8080, weight: 7}")))
	if len(c.Add)+len(c.Update)+len(c.Remove) != 0 || c.Settings != nil || len(c.SetReals) != 1 || len(c.SetReals[web]) != 2 {
		t.Errorf("a weight change gave %+v", c)
	}
	// a scheduler change updates the service and keeps its reals
	c = Diff(base, desired(t, edit(t, "scheduler: rr", "scheduler: wrr")))
	if len(c.Update) != 1 || c.Update[0].Key != web || c.Update[0].Scheduler != loadbalancer.WeightedRoundRobin || c.SetReals != nil {
		t.Errorf("a scheduler change gave %+v", c)
	}
	if c := Diff(base, base); !c.Empty() || c.String() != "" {
		t.Errorf("a configuration differs from itself: %+v", c)
	}
	// nil to a configuration adds every service with its reals
	c = Diff(nil, base)
	if len(c.Add) != 2 || c.Add[0].Key != web || c.Add[1].Key != dns || len(c.SetReals) != 2 || c.Settings == nil || *c.Settings != loadbalancer.DefaultSettings() {
		t.Errorf("from nil: %+v", c)
	}
}

func TestDiffEdges(t *testing.T) {
	base := desired(t, twoServices)
	if c := Diff(base, nil); len(c.Remove) != 2 || c.Settings != nil || len(c.Add)+len(c.Update)+len(c.SetReals) != 0 {
		t.Errorf("to nil: %+v, want every service removed", c)
	}
	if c := Diff(nil, nil); !c.Empty() {
		t.Errorf("nil to nil: %+v", c)
	}

	bigger := desired(t, twoServices)
	bigger.Services[0].MaglevSize = 251
	c := Diff(base, bigger)
	if len(c.Update) != 1 || !strings.Contains(c.String(), "update service tcp 10.0.0.1:80 (rr, local IPs 10.0.2.254 10.0.2.253, table size 251)") {
		t.Errorf("table size change: %q", c)
	}

	// the order of every list follows the key's string, not the input
	var many Desired
	many.Reals = map[loadbalancer.ServiceKey][]loadbalancer.Real{}
	for _, port := range []uint16{9, 80, 10, 1} {
		s := loadbalancer.Service{Key: loadbalancer.ServiceKey{VIP: netip.MustParseAddr("10.0.0.1"), Port: port, Proto: loadbalancer.TCP}}
		many.Services = append(many.Services, s)
	}
	many.Settings = loadbalancer.DefaultSettings()
	many.Settings.UDPTimeout = 30 * time.Second
	for range 3 {
		c := Diff(nil, &many)
		keys := make([]string, len(c.Add))
		for i, s := range c.Add {
			keys[i] = s.Key.String()
		}
		if !slices.IsSorted(keys) || len(keys) != 4 {
			t.Fatalf("added in the order %v", keys)
		}
		if c.Settings == nil || c.Settings.UDPTimeout != 30*time.Second {
			t.Errorf("settings %+v", c.Settings)
		}
		removed := Diff(&many, &Desired{Settings: many.Settings}).Remove
		if !slices.IsSortedFunc(removed, compareKeys) || len(removed) != 4 {
			t.Fatalf("removed in the order %v", removed)
		}
	}
}

// TestRenames: a name changed, added or removed on a service kept is a
// change of its own; a new or removed service is not a rename.
func TestRenames(t *testing.T) {
	old, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := Parse([]byte(strings.Replace(valid, "name: web", "name: www", 1)))
	if err != nil {
		t.Fatal(err)
	}
	got := Renames(old, renamed)
	if len(got) != 1 || got[0].From != "web" || got[0].To != "www" || got[0].Key.Port != 80 {
		t.Fatalf("renames %+v, want web -> www on port 80", got)
	}
	c := Changes{Renamed: got}
	if c.Empty() || !strings.Contains(c.String(), `rename service tcp 10.0.0.1:80: "web" -> "www"`) {
		t.Errorf("changes %q (empty %v), want the rename said", c.String(), c.Empty())
	}
	if r := Renames(old, old); r != nil {
		t.Errorf("no change: renames %+v", r)
	}
	if r := Renames(nil, old); r != nil {
		t.Errorf("first configuration: renames %+v", r)
	}
}

// TestChangesBrief: a long list of changes is cut at max lines and the
// rest counted by kind.
func TestChangesBrief(t *testing.T) {
	var c Changes
	for i := range 5 {
		c.Remove = append(c.Remove, loadbalancer.ServiceKey{VIP: netip.MustParseAddr("10.0.0.1"), Port: uint16(80 + i), Proto: loadbalancer.TCP})
	}
	if got := c.Brief(5); got != c.String() {
		t.Errorf("5 changes, max 5: %q, want them all", got)
	}
	want := "remove service tcp 10.0.0.1:80\nremove service tcp 10.0.0.1:81\n" +
		"... 3 more (in all: 5 services removed, 0 added, 0 updated, 0 real lists set, 0 renamed)"
	if got := c.Brief(2); got != want {
		t.Errorf("max 2: got %q, want %q", got, want)
	}
}
