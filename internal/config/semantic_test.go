// SPDX-License-Identifier: Apache-2.0

package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/sched"
)

// checkKind fails unless err is nil when want is "", or else a
// *ValidationError of the named kind with a problem containing want.
func checkKind(t *testing.T, err error, kind error, want string) {
	t.Helper()
	checkErr(t, err, want)
	if want == "" {
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError", err)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error %q is not %q", err, kind)
	}
}

// desiredIn parses yaml and validates it against env.
func desiredIn(t *testing.T, yaml string, env Env) error {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	_, err = c.DesiredIn(env)
	return err
}

// TestUnusableAddresses: no role takes the unspecified, broadcast,
// multicast or loopback addresses, and a VIP is not link-local.
func TestUnusableAddresses(t *testing.T) {
	v6svc := func(vip, laddr, real string) string {
		return addService(fmt.Sprintf(`{vip: "%s", port: 80, protocol: tcp, local_ips: ["%s"], reals: [{address: "%s", port: 80}]}`, vip, laddr, real))
	}
	for _, tc := range []struct {
		name string
		have string
		want string // "" = valid
	}{
		{"VIP loopback", with(t, "vip: 10.0.0.1", "vip: 127.0.0.1"), "services[0].vip: 127.0.0.1 is a loopback address, which cannot be a VIP"},
		{"VIP loopback, not the first", with(t, "vip: 10.0.0.1", "vip: 127.1.2.3"), "services[0].vip: 127.1.2.3 is a loopback address"},
		{"VIP broadcast", with(t, "vip: 10.0.0.1", "vip: 255.255.255.255"), "services[0].vip: 255.255.255.255 is the broadcast address, which cannot be a VIP"},
		{"VIP multicast", with(t, "vip: 10.0.0.1", "vip: 224.0.0.1"), "services[0].vip: 224.0.0.1 is a multicast address"},
		{"VIP unspecified", with(t, "vip: 10.0.0.1", "vip: 0.0.0.0"), "services[0].vip: 0.0.0.0 is the unspecified address"},
		{"VIP link-local", with(t, "vip: 10.0.0.1", "vip: 169.254.1.1"), "services[0].vip: 169.254.1.1 is a link-local address, which cannot be a VIP"},
		{"IPv6 VIP loopback", v6svc("::1", "2001:db8::fe", "2001:db8::2"), "services[1].vip: ::1 is a loopback address"},
		{"IPv6 VIP unspecified", v6svc("::", "2001:db8::fe", "2001:db8::2"), "services[1].vip: :: is the unspecified address"},
		{"IPv6 VIP multicast", v6svc("ff02::1", "2001:db8::fe", "2001:db8::2"), "services[1].vip: ff02::1 is a multicast address"},
		{"IPv6 VIP link-local", v6svc("fe80::1", "2001:db8::fe", "2001:db8::2"), "services[1].vip: fe80::1 is a link-local address"},
		{"real unspecified", with(t, "address: 10.0.2.1", "address: 0.0.0.0"), "services[0].reals[0].address: 0.0.0.0 is the unspecified address, which cannot be a real"},
		{"real broadcast", with(t, "address: 10.0.2.1", "address: 255.255.255.255"), "services[0].reals[0].address: 255.255.255.255 is the broadcast address"},
		{"real multicast", with(t, "address: 10.0.2.1", "address: 239.1.1.1"), "services[0].reals[0].address: 239.1.1.1 is a multicast address"},
		{"real loopback", with(t, "address: 10.0.2.1", "address: 127.0.0.1"), "services[0].reals[0].address: 127.0.0.1 is a loopback address"},
		{"IPv6 real multicast", v6svc("2001:db8::1", "2001:db8::fe", "ff05::2"), "services[1].reals[0].address: ff05::2 is a multicast address"},
		{"real link-local is fine", with(t, "address: 10.0.2.1", "address: 169.254.0.9"), ""},
		{"local IP unspecified", with(t, "local_ips: [10.0.2.254]", "local_ips: [0.0.0.0]"), "services[0].local_ips[0]: 0.0.0.0 is the unspecified address, which cannot be a local IP"},
		{"local IP broadcast", with(t, "local_ips: [10.0.2.254]", "local_ips: [255.255.255.255]"), "services[0].local_ips[0]: 255.255.255.255 is the broadcast address"},
		{"local IP multicast", with(t, "local_ips: [10.0.2.254]", "local_ips: [224.0.0.9]"), "services[0].local_ips[0]: 224.0.0.9 is a multicast address"},
		{"IPv6 local IP unspecified", v6svc("2001:db8::1", "::", "2001:db8::2"), "services[1].local_ips[0]: :: is the unspecified address"},
		{"subnet broadcast passes", with(t, "vip: 10.0.0.1", "vip: 10.0.0.255"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkKind(t, desiredIn(t, tc.have, Env{}), ErrUnusableAddress, tc.want)
		})
	}
}

// TestAddressIsVIP: a real or a local IP may not be the VIP of any
// service, its own or another's, however it is spelt.
func TestAddressIsVIP(t *testing.T) {
	other := `{vip: 10.0.0.2, port: 53, protocol: udp, local_ips: [10.0.2.254], reals: [{address: 10.0.2.1, port: 53}]}`
	v6 := `{vip: "2001:db8::1", port: 80, protocol: tcp, local_ips: ["2001:db8::fe"], reals: [{address: "2001:DB8:0::1", port: 80}]}`
	for _, tc := range []struct {
		name string
		have string
		want string
	}{
		{"real is its own VIP", with(t, "address: 10.0.2.2", "address: 10.0.0.1"), "services[0].reals[1].address: 10.0.0.1 is the VIP of services[0], so it cannot also be a real"},
		{"real is another's VIP", addService(strings.Replace(other, "address: 10.0.2.1", "address: 10.0.0.1", 1)), "services[1].reals[0].address: 10.0.0.1 is the VIP of services[0]"},
		{"real is a later service's VIP", strings.Replace(addService(other), "address: 10.0.2.1, port: 8080", "address: 10.0.0.2, port: 8080", 1), "services[0].reals[0].address: 10.0.0.2 is the VIP of services[1]"},
		{"local IP is a VIP", addService(strings.Replace(other, "local_ips: [10.0.2.254]", "local_ips: [10.0.0.1]", 1)), "services[1].local_ips[0]: 10.0.0.1 is the VIP of services[0], so it cannot also be a local IP"},
		{"local IP range holds a VIP", addService(strings.Replace(other, "local_ips: [10.0.2.254]", "local_ips: [10.0.2.254, 9.255.255.250-255, 10.0.0.0-3]", 1)),
			"services[1].local_ips[2]: 10.0.0.1 is the VIP of services[0], so it cannot also be a local IP"},
		{"IPv6 real spelt otherwise", addService(v6), "services[1].reals[0].address: 2001:db8::1 is the VIP of services[1]"},
		{"distinct", addService(other), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkKind(t, desiredIn(t, tc.have, Env{}), ErrAddressIsVIP, tc.want)
		})
	}
}

// TestLoopbackVIPGetsNoHostAddressHint: a loopback VIP the host owns is
// refused as loopback, without the hint that host_address would let it
// through (nothing would).
func TestLoopbackVIPGetsNoHostAddressHint(t *testing.T) {
	for _, vip := range []string{"127.0.0.1", `"::1"`} {
		lip := "10.0.2.254"
		if vip != "127.0.0.1" {
			lip = `"fd00::254"`
		}
		have := fmt.Sprintf("interfaces: [lo]\nservices:\n  - {vip: %s, port: 80, protocol: tcp, local_ips: [%s]}\n", vip, lip)
		err := desiredIn(t, have, Env{HostOwns: func(netip.Addr) bool { return true }})
		if err == nil || !strings.Contains(err.Error(), "is a loopback address, which cannot be a VIP") || strings.Contains(err.Error(), "host_address") {
			t.Errorf("VIP %s: %v; want it refused as loopback, without a host_address hint", vip, err)
		}
	}
}

// TestHostAddress: a VIP the host owns is refused unless its service
// says host_address: true; addresses xlb added are not the host's (the
// hook answers), and without a hook nothing is known.
func TestHostAddress(t *testing.T) {
	host := netip.MustParseAddr("10.0.0.1")
	asked := map[netip.Addr]int{}
	owns := func(a netip.Addr) bool { asked[a]++; return a == host }
	second := `{vip: 10.0.0.1, port: 0, protocol: tcp, local_ips: [10.0.2.254]}`
	for _, tc := range []struct {
		name string
		have string
		owns func(netip.Addr) bool
		want string
	}{
		{"host's VIP", valid, owns, "services[0].vip: 10.0.0.1 is an address this host already has"},
		{"said so", with(t, "vip: 10.0.0.1", "vip: 10.0.0.1\n    host_address: true"), owns, ""},
		{"not the host's", with(t, "vip: 10.0.0.1", "vip: 10.0.0.9"), owns, ""},
		{"one service says so, the other not", with(t, "vip: 10.0.0.1", "vip: 10.0.0.1\n    host_address: true") + "  - " + second + "\n",
			owns, "services[1].vip: 10.0.0.1 is an address this host already has: the service would take the host's own traffic"},
		{"no hook", valid, nil, ""},
		{"host's local IP", with(t, "vip: 10.0.0.1", "vip: 10.0.0.9") + "  - " +
			`{vip: 10.0.0.8, port: 0, protocol: tcp, local_ips: [10.0.2.250, "10.0.0.0-3"]}` + "\n",
			owns, "services[1].local_ips[1]: 10.0.0.1 is an address this host already has: its own connections from it would take ports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(asked)
			checkKind(t, desiredIn(t, tc.have, Env{HostOwns: tc.owns}), ErrHostAddress, tc.want)
			for a, n := range asked {
				if n > 1 {
					t.Errorf("the host was asked %d times about %s", n, a)
				}
			}
		})
	}
}

// TestDurations: NaN, infinities, negative and absurd durations are
// refused where they are read, in YAML and JSON, and the bounds of each
// field name it.
func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		have string
		want Duration
		err  string // "" = parses
	}{
		{"2s", Duration(2 * time.Second), ""},
		{"1.5", Duration(1500 * time.Millisecond), ""},
		{"0", 0, ""},
		{"NaN", 0, `"NaN" is not a duration: want a finite number of seconds`},
		{"nan", 0, `"nan" is not a duration`},
		{"Inf", 0, `"Inf" is not a duration`},
		{"-Inf", 0, `"-Inf" is not a duration`},
		{"1e300", 0, `"1e300" seconds is longer than any duration xlb takes`},
		{"-5", 0, `"-5" is negative`},
		{"-1s", 0, `"-1s" is negative`},
		{"900000h", 0, `"900000h" is longer than any duration xlb takes`},
		{"soon", 0, `"soon" is not a duration`},
	} {
		t.Run(tc.have, func(t *testing.T) {
			got, err := ParseDuration(tc.have)
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("ParseDuration(%q) = %s, want %s", tc.have, got, tc.want)
			}
		})
	}
	hc := func(s string) string {
		return with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, "+s+"}")
	}
	for _, tc := range []struct{ name, have, want string }{
		{"YAML NaN", hc("interval: NaN"), `line 8: "NaN" is not a duration`},
		{"YAML infinity", hc("timeout: .inf"), `line 8: ".inf" is not a duration`},
		{"YAML negative", hc("timeout: -2s"), `line 8: "-2s" is negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.have))
			checkErr(t, err, tc.want)
		})
	}
	var h HealthCheck
	checkErr(t, json.Unmarshal([]byte(`{"type": "tcp", "interval": "NaN"}`), &h), `"NaN" is not a duration`)
	checkErr(t, json.Unmarshal([]byte(`{"type": "tcp", "interval": -3}`), &h), `"-3" is negative`)

	for _, tc := range []struct{ name, have, want string }{
		{"interval too short", hc("interval: 5ms"), "services[0].health_check.interval: 5ms: want 10ms to 1h0m0s"},
		{"interval too long", hc("interval: 2h"), "services[0].health_check.interval: 2h0m0s: want 10ms to 1h0m0s"},
		{"timeout too short", hc("timeout: 500us"), "services[0].health_check.timeout: 500µs: want 1ms to the interval (5s)"},
		{"rise", hc("rise: 1000"), "services[0].health_check.rise: 1000: want 1 to 100"},
		{"timeouts", valid + "timeouts: {udp: -1}\n", "timeouts.udp: -1 is out of range"},
		{"persistent", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 99999999"), "services[0].persistent: 99999999 seconds: want 0 (off) to 31536000"},
		{"weight", with(t, "weight: 1}", "weight: 70000}"), "services[0].reals[0].weight: 70000 is out of range"},
		{"port", with(t, "port: 80\n", "port: 80000\n"), "services[0].port: 80000 is not a port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkKind(t, desiredIn(t, tc.have, Env{}), ErrOutOfRange, tc.want)
		})
	}
}

// services writes n services tcp 10.1.x.y:80, each with the reals and
// local IPs its function gives.
func services(n int, reals, laddrs func(i int) []string) string {
	var b strings.Builder
	b.WriteString("interfaces: [eth0]\nservices:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {vip: 10.1.%d.%d, port: 80, protocol: tcp, local_ips: [%s], reals: [", i>>8, i&255, strings.Join(laddrs(i), ", "))
		for j, r := range reals(i) {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{address: %s, port: 80}", r)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// TestCapacity checks a configuration against small limits: each is
// reported once, where it is crossed; the local IPs the data path holds
// count, once.
func TestCapacity(t *testing.T) {
	lim := loadbalancer.Limits{Services: 3, VIPs: 3, Reals: 4, LocalIPs: 3}
	none := func(int) []string { return nil }
	two := func(b int) func(int) []string {
		return func(i int) []string {
			return []string{fmt.Sprintf("10.%d.0.%d", b, 2*i), fmt.Sprintf("10.%d.0.%d", b, 2*i+1)}
		}
	}
	held := []netip.Addr{netip.MustParseAddr("10.9.0.1"), netip.MustParseAddr("10.9.0.2")}
	for _, tc := range []struct {
		name string
		have string
		held []netip.Addr
		want string
	}{
		{"at every limit", services(2, two(2), func(i int) []string { return []string{"10.3.0.0", "10.3.0.1", "10.3.0.2"}[i : i+2] }), nil, ""},
		{"services", services(4, none, none), nil, "services: 4 services; the data path holds at most 3 (raise max_services, up to 65536)"},
		{"reals", services(3, two(2), none), nil, "services[2].reals[0]: one real too many: the configuration has 6 reals over all services and the data path holds at most 4"},
		{"local IPs", services(2, none, two(3)), nil, "services[1].local_ips[1]: 10.3.0.3 is one local IP too many: the data path holds at most 3 (max_local_ips) and keeps 0 already"},
		{"local IPs held", services(1, none, two(3)), held, "services[0].local_ips[1]: 10.3.0.1 is one local IP too many: the data path holds at most 3 (max_local_ips) and keeps 2 already"},
		{"a range counts each address", services(1, none, func(int) []string { return []string{"10.3.0.0-3"} }), nil,
			"services[0].local_ips[0]: 10.3.0.3 is one local IP too many: the data path holds at most 3 (max_local_ips) and keeps 0 already"},
		{"held local IPs the file names count once", services(1, none, func(int) []string { return []string{"10.9.0.1", "10.3.0.0"} }), held, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := desiredIn(t, tc.have, Env{Limits: lim, HeldLocalIPs: tc.held})
			checkKind(t, err, ErrCapacity, tc.want)
			if err != nil && strings.Count(err.Error(), "too many") > 1 {
				t.Errorf("a limit reported more than once:\n%v", err)
			}
		})
	}
	// VIPs apart from services: services share VIPs
	shared := "interfaces: [eth0]\nservices:\n  - {vip: 10.1.0.1, port: 80, protocol: tcp}\n  - {vip: 10.1.0.1, port: 81, protocol: tcp}\n" +
		"  - {vip: 10.1.0.2, port: 80, protocol: tcp}\n"
	checkKind(t, desiredIn(t, shared, Env{Limits: loadbalancer.Limits{VIPs: 2}}), ErrCapacity, "")
	checkKind(t, desiredIn(t, shared, Env{Limits: loadbalancer.Limits{VIPs: 1}}), ErrCapacity, "services[2].vip: 10.1.0.2 is one VIP too many")
}

// TestConnTableKeepsItsSize: a running data path's connection tables keep
// their size; a configuration asking for another one is refused, one
// that leaves conn_table out matches only tables of the default size.
func TestConnTableKeepsItsSize(t *testing.T) {
	running := loadbalancer.ConnTableSizes{IPv4: 4096, IPv6: 1024}
	for _, tc := range []struct {
		name, table string
		running     loadbalancer.ConnTableSizes
		want        string
	}{
		{"same size", "conn_table: {ipv4: 4096, ipv6: 1024}\n", running, ""},
		{"no data path yet", "conn_table: {ipv4: 4096}\n", loadbalancer.ConnTableSizes{}, ""},
		{"defaults on default tables", "", loadbalancer.DefaultConnTableSizes(), ""},
		{"resized", "conn_table: {ipv4: 8192, ipv6: 1024}\n", running,
			"conn_table: ipv4 8192, ipv6 1024: the running tables hold 4096 IPv4 and 1024 IPv6 connections and keep their size"},
		{"left out", "", running, "conn_table: ipv4 1048576, ipv6 262144: the running tables hold 4096 IPv4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := tc.table + "interfaces: [eth0]\nservices: []\n"
			err := desiredIn(t, have, Env{Limits: loadbalancer.Limits{ConnTable: tc.running}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestScheduleTables: reals whose schedule table cannot be built are
// refused with the service's reals as the field, whatever the limits.
func TestScheduleTables(t *testing.T) {
	svc := func(sched string, n int, weight func(i int) int) *Config {
		s := Service{VIP: "10.1.0.1", Port: 80, Protocol: "tcp", Scheduler: sched}
		for i := range n {
			w := weight(i)
			s.Reals = append(s.Reals, Real{Address: netip.AddrFrom4([4]byte{10, byte(2 + i>>16), byte(i >> 8), byte(i)}).String(), Port: 80, Weight: &w})
		}
		return &Config{Interfaces: []string{"eth0"}, Services: []Service{s}}
	}
	heavy := func(i int) int {
		if i == 0 {
			return 1
		}
		return 65535
	}
	for _, tc := range []struct {
		name string
		have *Config
		want string
	}{
		{"wrr cycle at the limit", svc("wrr", 17, heavy), ""}, // 16 x 65535 + 1 slots
		{"wrr cycle too long", svc("wrr", 18, heavy), "services[0].reals: the weights make a wrr table of 1114096 slots"},
		{"wlc counts the weights too", svc("wlc", 18, heavy), "services[0].reals: the weights make a wlc table"},
		{"even weights reduce", svc("wrr", 100, func(int) int { return 65535 }), ""},
		{"rr ignores weights", svc("rr", 18, heavy), ""},
		{"mh holds a real a slot", svc("mh", sched.DefaultMaglevSize+1, func(i int) int { return min(i, 1) }), ""},
		{"sh holds no more", svc("sh", sched.DefaultMaglevSize+1, func(int) int { return 1 }),
			"services[0].reals: 65538 reals with a weight above 0; a sh table of 65537 slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.have.DesiredIn(Env{})
			checkKind(t, err, ErrCapacity, tc.want)
		})
	}
}

// TestMaxLocalIPs: max_local_ips is checked against its range and
// against what runs; left out it is what runs (or the default), and a
// file alone is checked against its own capacity.
func TestMaxLocalIPs(t *testing.T) {
	ips300 := "interfaces: [eth0]\nservices:\n" +
		"  - {vip: 10.0.0.1, port: 80, protocol: tcp, local_ips: [\"10.1.0.0-255\"]}\n" +
		"  - {vip: 10.0.0.2, port: 80, protocol: tcp, local_ips: [\"10.1.1.0-49\"]}\n"
	for _, tc := range []struct {
		name    string
		have    string
		running int
		want    string
		kind    error
		capa    int
	}{
		{"default", valid, 0, "", nil, loadbalancer.DefaultLocalIPCapacity},
		{"left out keeps what runs", valid, 8192, "", nil, 8192},
		{"set", "max_local_ips: 16384\n" + valid, 0, "", nil, 16384},
		{"below the range", "max_local_ips: 100\n" + valid, 0, "max_local_ips: 100 is out of range (want 256 to 65536 local IPs, or 0 for the default 4096)", ErrOutOfRange, 0},
		{"above the range", "max_local_ips: 70000\n" + valid, 0, "max_local_ips: 70000 is out of range", ErrOutOfRange, 0},
		{"another than runs", "max_local_ips: 8192\n" + valid, 4096, "max_local_ips: 8192: the running data path holds 4096 local IPs and keeps that capacity", nil, 0},
		{"a file over its own capacity", "max_local_ips: 256\n" + ips300, 0,
			"services[1].local_ips[0]: 10.1.1.0 is one local IP too many: the data path holds at most 256 (max_local_ips)", ErrCapacity, 0},
		{"a file within its own capacity", "max_local_ips: 512\n" + ips300, 0, "", nil, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.have))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			d, err := c.DesiredIn(Env{Limits: loadbalancer.Limits{LocalIPs: tc.running}})
			if tc.kind != nil {
				checkKind(t, err, tc.kind, tc.want)
				return
			}
			checkErr(t, err, tc.want)
			if err == nil && d.LocalIPCapacity != tc.capa {
				t.Errorf("capacity %d, want %d", d.LocalIPCapacity, tc.capa)
			}
		})
	}
}

// TestMaxServicesAndReals: max_services and max_reals are checked
// against their ranges and against what runs, and reach Desired; left
// out they are what runs, or the defaults.
func TestMaxServicesAndReals(t *testing.T) {
	for _, tc := range []struct {
		name            string
		have            string
		running         loadbalancer.Limits
		want            string
		kind            error
		services, reals int
	}{
		{"defaults", valid, loadbalancer.Limits{}, "", nil, loadbalancer.DefaultServiceCapacity, loadbalancer.DefaultRealCapacity},
		{"left out keep what runs", valid, loadbalancer.Limits{Services: 4096, Reals: 40000}, "", nil, 4096, 40000},
		{"set", "max_services: 16384\nmax_reals: 65536\n" + valid, loadbalancer.Limits{}, "", nil, 16384, 65536},
		{"services below the range", "max_services: 8\n" + valid, loadbalancer.Limits{},
			"max_services: 8 is out of range (want 16 to 65536 services, or 0 for the default 1024)", ErrOutOfRange, 0, 0},
		{"reals above the range", "max_reals: 65537\n" + valid, loadbalancer.Limits{},
			"max_reals: 65537 is out of range (want 16 to 65536 reals, or 0 for the default 16384)", ErrOutOfRange, 0, 0},
		{"another than runs", "max_services: 2048\n" + valid, loadbalancer.Limits{Services: 1024},
			"max_services: 2048: the running data path holds 1024 services and keeps that capacity", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.have))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			d, err := c.DesiredIn(Env{Limits: tc.running})
			if tc.kind != nil {
				checkKind(t, err, tc.kind, tc.want)
				return
			}
			checkErr(t, err, tc.want)
			if err == nil && (d.ServiceCapacity != tc.services || d.RealCapacity != tc.reals) {
				t.Errorf("capacities %d services, %d reals; want %d, %d", d.ServiceCapacity, d.RealCapacity, tc.services, tc.reals)
			}
		})
	}
}

// TestClientAddress: client_address takes none, toa or proxy-v2, on TCP
// services only, and reaches the service.
func TestClientAddress(t *testing.T) {
	for _, tc := range []struct{ name, value, proto, want string }{
		{"toa", "toa", "tcp", ""},
		{"proxy-v2", "proxy-v2", "tcp", ""},
		{"none", "none", "udp", ""},
		{"unknown", "proxy", "tcp", `services[0].client_address: "proxy": want none, toa or proxy-v2`},
		{"udp", "proxy-v2", "udp", "services[0].client_address: proxy-v2 is for TCP services; this one is udp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := with(t, "protocol: tcp\n", "protocol: "+tc.proto+"\n    client_address: "+tc.value+"\n")
			c, err := Parse([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.DesiredIn(Env{})
			checkErr(t, err, tc.want)
			if err != nil {
				return
			}
			want, _ := loadbalancer.ParseClientAddress(tc.value)
			if got := d.Services[0].ClientAddress; got != want {
				t.Errorf("client address %s, want %s", got, want)
			}
		})
	}
}

// TestSynProxy: syn_proxy is for TCP services, not yet with a client
// address, and reaches the service.
func TestSynProxy(t *testing.T) {
	for _, tc := range []struct{ name, extra, proto, want string }{
		{"tcp", "", "tcp", ""},
		{"udp", "", "udp", "services[0].syn_proxy: is for TCP services; this one is udp"},
		{"with toa", "\n    client_address: toa", "tcp", "services[0].syn_proxy: not supported together with client_address toa yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := with(t, "protocol: tcp\n", "protocol: "+tc.proto+"\n    syn_proxy: true"+tc.extra+"\n")
			c, err := Parse([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.DesiredIn(Env{})
			checkErr(t, err, tc.want)
			if err == nil && !d.Services[0].SynProxy {
				t.Error("syn_proxy did not reach the service")
			}
		})
	}
}
