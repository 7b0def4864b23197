// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

// The literal outputs below were captured from iproute2 6.1 on Linux 6.18
// in two network namespaces joined by a veth (10.9.0.1/24 and fd09::1/64
// here, 10.9.0.2 and fd09::2 the peer, 10.9.1.0/24 and fd09:1::/64 behind
// it).

func hop(dev, addr string) Hop { return Hop{Dev: dev, Addr: netip.MustParseAddr(addr)} }

func TestParseRouteGet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		have   string
		want   Hop
		wantOK bool
		err    bool
	}{
		{
			name:   "on-link v4",
			have:   `[{"dst":"10.9.0.2","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`,
			want:   hop("va", "10.9.0.2"),
			wantOK: true,
		},
		{
			name:   "via gateway v4",
			have:   `[{"dst":"10.9.1.1","gateway":"10.9.0.2","dev":"va","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":[]}]`,
			want:   hop("va", "10.9.0.2"),
			wantOK: true,
		},
		{
			name:   "on-link v6",
			have:   `[{"dst":"fd09::2","from":"::","dev":"va","protocol":"kernel","prefsrc":"fd09::1","metric":256,"flags":[],"pref":"medium"}]`,
			want:   hop("va", "fd09::2"),
			wantOK: true,
		},
		{
			name:   "via gateway v6",
			have:   `[{"dst":"fd09:1::5","from":"::","gateway":"fd09::2","dev":"va","prefsrc":"fd09::1","metric":1024,"flags":[],"pref":"medium"}]`,
			want:   hop("va", "fd09::2"),
			wantOK: true,
		},
		{
			name:   "v4 via a v6 gateway",
			have:   `[{"dst":"10.9.7.1","via":{"family":"inet6","host":"fe80::1"},"dev":"va","flags":[]}]`,
			want:   hop("va", "fe80::1"),
			wantOK: true,
		},
		{
			name: "local address",
			have: `[{"type":"local","dst":"10.9.0.1","dev":"lo","prefsrc":"10.9.0.1","flags":[],"uid":0,"cache":["local"]}]`,
		},
		{
			name: "loopback",
			have: `[{"type":"local","dst":"127.0.0.1","dev":"lo","prefsrc":"127.0.0.1","flags":[],"uid":0,"cache":["local"]}]`,
		},
		{
			name: "blackhole",
			have: `[{"type":"blackhole","dst":"10.9.9.9","flags":[],"uid":0,"cache":[]}]`,
		},
		{name: "empty", have: `[]`, err: true},
		{name: "not json", have: `RTNETLINK answers: Network is unreachable`, err: true},
		{name: "bad gateway", have: `[{"dst":"10.9.1.1","gateway":"x","dev":"va"}]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := parseRouteGet([]byte(tc.have))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseGateways(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want []Hop
	}{
		{
			name: "v4",
			have: `[{"dst":"10.9.0.0/24","protocol":"kernel","scope":"link","prefsrc":"10.9.0.1","flags":[]},{"dst":"10.9.1.0/24","gateway":"10.9.0.2","flags":[]}]`,
			want: []Hop{hop("va", "10.9.0.2")},
		},
		{
			name: "v6",
			have: `[{"dst":"fd09::/64","protocol":"kernel","metric":256,"flags":[],"pref":"medium"},{"dst":"fd09:1::/64","gateway":"fd09::2","metric":1024,"flags":[],"pref":"medium"},{"dst":"fe80::/64","protocol":"kernel","metric":256,"flags":[],"pref":"medium"}]`,
			want: []Hop{hop("va", "fd09::2")},
		},
		{
			name: "default and a second route via the same gateway",
			have: `[{"dst":"default","gateway":"10.9.0.254","flags":[]},{"dst":"10.9.1.0/24","gateway":"10.9.0.2","flags":[]},{"dst":"10.9.2.0/24","gateway":"10.9.0.2","flags":[]}]`,
			want: []Hop{hop("va", "10.9.0.254"), hop("va", "10.9.0.2")},
		},
		{
			name: "multipath: only the paths out of the device",
			have: `[{"dst":"10.9.3.0/24","flags":[],"nexthops":[{"gateway":"10.9.0.2","dev":"va","weight":1,"flags":[]},{"gateway":"10.8.0.2","dev":"vz","weight":1,"flags":[]}]}]`,
			want: []Hop{hop("va", "10.9.0.2")},
		},
		{
			name: "unreachable route",
			have: `[{"type":"unreachable","dst":"10.9.4.0/24","flags":[]}]`,
		},
		{name: "none", have: `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGateways([]byte(tc.have), "va")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := parseGateways([]byte("{"), "va"); err == nil {
		t.Error("no error for bad json")
	}
}

func TestParseNeigh(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		dev  string
		want []entry
	}{
		{
			name: "managed, one device",
			have: `[{"dst":"10.9.0.2","lladdr":"de:f0:2a:b8:c3:7d","managed":null,"extern_learn":null,"state":["REACHABLE"]}]`,
			dev:  "va",
			want: []entry{{Hop: hop("va", "10.9.0.2"), States: []string{"REACHABLE"}, Managed: true, ExternLearn: true}},
		},
		{
			name: "managed, not yet resolved",
			have: `[{"dst":"fd09::2","managed":null,"extern_learn":null,"state":["INCOMPLETE"]}]`,
			dev:  "va",
			want: []entry{{Hop: hop("va", "fd09::2"), States: []string{"INCOMPLETE"}, Managed: true, ExternLearn: true}},
		},
		{
			name: "permanent",
			have: `[{"dst":"10.9.0.7","lladdr":"02:00:00:00:00:07","state":["PERMANENT"]}]`,
			dev:  "va",
			want: []entry{{Hop: hop("va", "10.9.0.7"), States: []string{"PERMANENT"}}},
		},
		{
			name: "whole table with dev",
			have: `[{"dst":"10.9.0.7","dev":"va","lladdr":"02:00:00:00:00:07","state":["PERMANENT"]},{"dst":"10.9.0.9","dev":"va","lladdr":"02:00:00:00:00:09","state":["NOARP"]},{"dst":"10.9.0.2","dev":"va","lladdr":"de:f0:2a:b8:c3:7d","managed":null,"state":["REACHABLE"]},{"dst":"10.9.0.10","dev":"va","managed":null,"extern_learn":null,"state":["FAILED"]}]`,
			want: []entry{
				{Hop: hop("va", "10.9.0.7"), States: []string{"PERMANENT"}},
				{Hop: hop("va", "10.9.0.9"), States: []string{"NOARP"}},
				{Hop: hop("va", "10.9.0.2"), States: []string{"REACHABLE"}, Managed: true},
				{Hop: hop("va", "10.9.0.10"), States: []string{"FAILED"}, Managed: true, ExternLearn: true},
			},
		},
		{name: "none", have: `[]`, dev: "va", want: []entry{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNeigh([]byte(tc.have), tc.dev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`{`, `[{"dst":"x"}]`, `[{"dst":1}]`} {
		if _, err := parseNeigh([]byte(bad), ""); err == nil {
			t.Errorf("parseNeigh(%s): no error", bad)
		}
	}
}

func TestEntryOperator(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []string
		want bool
	}{
		{"permanent", []string{"PERMANENT"}, true},
		{"noarp", []string{"NOARP"}, true},
		{"reachable", []string{"REACHABLE"}, false},
		{"stale", []string{"STALE"}, false},
		{"failed", []string{"FAILED"}, false},
		{"none", nil, false},
	} {
		if got := (entry{States: tc.have}).operator(); got != tc.want {
			t.Errorf("%s: operator() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseLinks(t *testing.T) {
	have := `[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00"},{"ifindex":2,"link_index":2,"ifname":"va","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"noqueue","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"6a:0c:c2:57:23:da","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0}]`
	got, err := parseLinks([]byte(have))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int]string{1: "lo", 2: "va"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestTriggers(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want bool
	}{
		{"route added", "[ROUTE]10.9.5.0/24 via 10.9.0.2 dev va ", true},
		{"route deleted", "[ROUTE]Deleted 10.9.5.0/24 via 10.9.0.2 dev va ", true},
		{"link", "[LINK]2: va@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400 qdisc noqueue state UP group default ", true},
		{"link continuation", "    link/ether 6a:0c:c2:57:23:da brd ff:ff:ff:ff:ff:ff link-netns capB", false},
		{"neighbour state", "[NEIGH]10.9.0.10 dev va managed extern_learn FAILED ", false},
		{"neighbour deleted", "[NEIGH]Deleted 10.9.0.33 dev va FAILED ", true},
	} {
		if got := triggers(tc.have); got != tc.want {
			t.Errorf("%s: triggers(%q) = %v, want %v", tc.name, tc.have, got, tc.want)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name string
		have error
		want bool
	}{
		{"nil", nil, false},
		{"old kernel", &ipError{err: errors.New("exit status 2"), stderr: "RTNETLINK answers: Invalid argument"}, true},
		{"old iproute2", &ipError{err: errors.New("exit status 255"), stderr: `Error: either "to" is duplicate, or "managed" is a garbage.`}, true},
		{"flag combination", &ipError{err: errors.New("exit status 2"), stderr: "Error: Invalid NTF_* flag combination."}, true},
		{"flag dropped", &ipError{err: errors.New("exit status 2"), stderr: "Error: No link layer address given."}, true},
		{"no device", &ipError{err: errors.New("exit status 1"), stderr: `Cannot find device "vz"`}, false},
		{"unreachable", &ipError{err: errors.New("exit status 2"), stderr: "RTNETLINK answers: Network is unreachable"}, false},
	} {
		if got := unsupported(tc.have); got != tc.want {
			t.Errorf("%s: unsupported(%v) = %v, want %v", tc.name, tc.have, got, tc.want)
		}
	}
}
