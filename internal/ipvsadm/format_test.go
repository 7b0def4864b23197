// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func counts(c ...uint64) api.Counters {
	return api.Counters{Conns: c[0], InPackets: c[1], OutPackets: c[2], InBytes: c[3], OutBytes: c[4]}
}

// addr parses an address of the fixtures.
var addr = netip.MustParseAddr

// fixture returns services out of ipvsadm's order (IPv6 first, UDP
// before TCP, reals backwards) to check the sorting: a persistent TCP
// service with a netmask and counters big enough for every suffix, a
// UDP service with zero counters, and an IPv6 service.
func fixture() []api.Service {
	return []api.Service{
		{VIP: addr("2001:db8::1"), Port: 443, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.WeightedRoundRobin, Mode: "fullnat", Persistent: 600, Netmask: "64",
			LocalIPs: []netip.Addr{addr("2001:db8::fe")}, Stats: counts(1, 2, 3, 4, 5),
			Reals: []api.Real{{Address: addr("2001:db8::2"), Port: 443, Weight: 1, Stats: counts(1, 2, 3, 4, 5)}}},
		{VIP: addr("10.0.0.1"), Port: 53, Protocol: loadbalancer.UDP, Scheduler: loadbalancer.SourceHash, Mode: "fullnat", LocalIPs: []netip.Addr{addr("10.0.0.254")},
			Reals: []api.Real{{Address: addr("10.0.1.2"), Port: 53, Weight: 1}}},
		{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin, Mode: "fullnat", Persistent: 300, Netmask: "255.255.255.0",
			LocalIPs: []netip.Addr{addr("10.0.0.254"), addr("10.0.0.253")}, Stats: counts(12, 72, 48, 4608, 7296),
			Reals: []api.Real{
				{Address: addr("10.0.1.2"), Port: 8080, Weight: 2, ActiveConns: 3, InactiveConns: 4,
					Stats: counts(0, 0, 0, 99_999_999_999, 100_000_000_000)},
				{Address: addr("10.0.1.1"), Port: 8080, Weight: 1, ActiveConns: 1,
					Stats: counts(99_999_999, 100_000_000, 999_999_999, 1_000_000_000, 123_456_789_012_345)},
			}},
	}
}

// scaled returns the fixture with every counter multiplied by n.
func scaled(n uint64) []api.Service {
	svcs := fixture()
	mul := func(c api.Counters) api.Counters {
		return counts(c.Conns*n, c.InPackets*n, c.OutPackets*n, c.InBytes*n, c.OutBytes*n)
	}
	for i := range svcs {
		svcs[i].Stats = mul(svcs[i].Stats)
		for j := range svcs[i].Reals {
			svcs[i].Reals[j].Stats = mul(svcs[i].Reals[j].Stats)
		}
	}
	return svcs
}

func TestWriteList(t *testing.T) {
	header := Header("v1.2.3")
	for _, tc := range []struct {
		name string
		have []api.Service
		opts ListOptions
		want string
	}{
		{"-L -n", fixture(), ListOptions{Numeric: true}, wantPlain},
		{"-L -n --stats", fixture(), ListOptions{Numeric: true, Stats: true}, wantStats},
		{"-L -n --stats --exact", fixture(), ListOptions{Numeric: true, Stats: true, Exact: true}, wantExact},
		{"--stats wins over --rate", fixture(), ListOptions{Stats: true, Rate: true}, wantStats},
		{"-L -n --rate", Rates(scaled(0), scaled(2), 2*time.Second), ListOptions{Numeric: true, Rate: true}, wantRate},
		{"-L --thresholds", fixture(), ListOptions{Thresholds: true}, wantThresholds},
		{"-L --persistent-conn", fixture(), ListOptions{PersistentConn: true}, wantPconn},
		{"no services", nil, ListOptions{}, header + "Prot LocalAddress:Port Scheduler Flags\n" +
			"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteList(&b, header, tc.have, tc.opts); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", show(b.String()), show(tc.want))
			}
		})
	}
}

// show makes trailing spaces visible.
func show(s string) string { return strings.ReplaceAll(s, " \n", "·\n") }

func TestWriteListOneService(t *testing.T) {
	svc, ok := FindService(fixture(), Service{Proto: "udp", Addr: mustAddrPort("10.0.0.1:53")})
	if !ok {
		t.Fatal("FindService did not find udp 10.0.0.1:53")
	}
	if _, ok := FindService(fixture(), Service{Proto: "tcp", Addr: mustAddrPort("10.0.0.1:53")}); ok {
		t.Fatal("FindService found tcp 10.0.0.1:53, which is udp")
	}
	var b strings.Builder
	if err := WriteList(&b, "", []api.Service{svc}, ListOptions{Numeric: true}); err != nil {
		t.Fatal(err)
	}
	want := "Prot LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
		"UDP  10.0.0.1:53 sh\n" +
		"  -> 10.0.1.2:53                  FullNat 1      0          0         \n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", show(b.String()), show(want))
	}
}

func TestNoSort(t *testing.T) {
	var b strings.Builder
	if err := WriteList(&b, "", fixture(), ListOptions{NoSort: true}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "TCP") || strings.HasPrefix(line, "UDP") || strings.HasPrefix(line, "  -> 10.0.1.") {
			order = append(order, strings.Fields(line)[1])
		}
	}
	want := "[2001:db8::1]:443 10.0.0.1:53 10.0.1.2:53 10.0.0.1:80 10.0.1.2:8080 10.0.1.1:8080"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("--nosort order %s, want the daemon's: %s", got, want)
	}
}

func TestPersistenceFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    api.Service
		list    string // the service line of -L
		rule    string // the -A line of -S
		comment string
	}{
		{"off", api.Service{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.WeightedLeastConn},
			"TCP  10.0.0.1:80 wlc", "-A -t 10.0.0.1:80 -s wlc", ""},
		{"on", api.Service{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin, Persistent: 300},
			"TCP  10.0.0.1:80 rr persistent 300", "-A -t 10.0.0.1:80 -s rr -p 300", ""},
		{"prefix length", api.Service{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin, Persistent: 60, Netmask: "24"},
			"TCP  10.0.0.1:80 rr persistent 60 mask 255.255.255.0", "-A -t 10.0.0.1:80 -s rr -p 60 -M 255.255.255.0", ""},
		{"slash prefix", api.Service{VIP: addr("10.0.0.1"), Port: 0, Protocol: loadbalancer.UDP, Scheduler: loadbalancer.SourceHash, Persistent: 60, Netmask: "/16"},
			"UDP  10.0.0.1:0 sh persistent 60 mask 255.255.0.0", "-A -u 10.0.0.1:0 -s sh -p 60 -M 255.255.0.0", ""},
		{"whole address", api.Service{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin, Persistent: 60, Netmask: "255.255.255.255"},
			"TCP  10.0.0.1:80 rr persistent 60", "-A -t 10.0.0.1:80 -s rr -p 60", ""},
		{"mask without persistence", api.Service{VIP: addr("10.0.0.1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.RoundRobin, Netmask: "255.255.255.0"},
			"TCP  10.0.0.1:80 rr", "-A -t 10.0.0.1:80 -s rr", "ipvsadm shows the mask only with persistence"},
		{"IPv6 whole address", api.Service{VIP: addr("2001:db8::1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.MaglevHash, Persistent: 10, Netmask: "128"},
			"TCP  [2001:db8::1]:80 mh persistent 10", "-A -t [2001:db8::1]:80 -s mh -p 10", ""},
		{"IPv6 prefix", api.Service{VIP: addr("2001:db8::1"), Port: 80, Protocol: loadbalancer.TCP, Scheduler: loadbalancer.MaglevHash, Persistent: 10, Netmask: "/48"},
			"TCP  [2001:db8::1]:80 mh persistent 10 mask 48", "-A -t [2001:db8::1]:80 -s mh -p 10 -M 48", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l, r strings.Builder
			if err := WriteList(&l, "", []api.Service{tc.have}, ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := WriteRules(&r, []api.Service{tc.have}, ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(l.String(), "\n")[2]; got != tc.list {
				t.Errorf("-L line %q, want %q %s", got, tc.list, tc.comment)
			}
			if got := strings.TrimSuffix(r.String(), "\n"); got != tc.rule {
				t.Errorf("-S line %q, want %q %s", got, tc.rule, tc.comment)
			}
		})
	}
}

func TestRates(t *testing.T) {
	prev := fixture()[:2] // the TCP service is new: its rates are 0
	cur := scaled(3)
	cur[1].Stats = counts(0, 0, 0, 0, 0) // zeroed since: 0, not a wrap
	got := Rates(prev, cur, time.Second)
	if got[0].Stats != counts(2, 4, 6, 8, 10) || got[0].Reals[0].Stats != counts(2, 4, 6, 8, 10) {
		t.Errorf("IPv6 service rates %+v, real %+v; want 2, 4, 6, 8, 10", got[0].Stats, got[0].Reals[0].Stats)
	}
	if got[1].Stats != (api.Counters{}) || got[2].Stats != (api.Counters{}) || got[2].Reals[0].Stats != (api.Counters{}) {
		t.Errorf("zeroed and new services have rates %+v and %+v; want 0", got[1].Stats, got[2].Stats)
	}
	if cur[0].Stats != counts(3, 6, 9, 12, 15) {
		t.Error("Rates changed its input")
	}
}

func TestWriteRules(t *testing.T) {
	var b strings.Builder
	if err := WriteRules(&b, fixture(), ListOptions{Numeric: true}); err != nil {
		t.Fatal(err)
	}
	if b.String() != wantRules {
		t.Errorf("got\n%s\nwant\n%s", b.String(), wantRules)
	}
}

func TestWriteLaddrs(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []api.Service
		want string
	}{
		{"every service", fixture(), wantLaddrs},
		{"none: no title", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteLaddrs(&b, tc.have); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", show(b.String()), show(tc.want))
			}
		})
	}
}

func TestWriteTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name string
		have *config.Config
		want string
	}{
		{"defaults", &config.Config{}, "Timeout (tcp tcpfin udp): 900 7 300\n"},
		{"no configuration", nil, "Timeout (tcp tcpfin udp): 900 7 300\n"},
		{"set", &config.Config{Timeouts: &config.Timeouts{TCP: 600, UDP: 30}}, "Timeout (tcp tcpfin udp): 600 7 30\n"},
		{"ipvs profile", &config.Config{Timeouts: &config.Timeouts{Profile: "ipvs", UDP: 30}}, "Timeout (tcp tcpfin udp): 900 120 30\n"},
		{"dpvs profile", &config.Config{Timeouts: &config.Timeouts{Profile: "dpvs"}}, "Timeout (tcp tcpfin udp): 90 7 300\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteTimeouts(&b, CurrentTimeouts(tc.have)); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// fixtureConns are the entries of four connections: three with both
// entries (reverse entries first, to check the pairing) and one whose
// reverse entry is missing.
func fixtureConns() []api.Conn {
	ap := netip.MustParseAddrPort
	return []api.Conn{
		{Protocol: loadbalancer.TCP, From: ap("10.0.1.1:8080"), To: ap("10.0.0.254:20001"), Peer: ap("203.0.113.7:5000"), Reverse: true, State: loadbalancer.StateEstablished, IdleSecs: 2},
		{Protocol: loadbalancer.TCP, From: ap("203.0.113.7:5000"), To: ap("10.0.0.1:80"), Peer: ap("10.0.0.254:20001"), State: loadbalancer.StateEstablished, IdleSecs: 5},
		{Protocol: loadbalancer.UDP, From: ap("203.0.113.8:5353"), To: ap("10.0.0.1:53"), Peer: ap("10.0.0.254:20002"), State: loadbalancer.StateUDP, IdleSecs: 400},
		{Protocol: loadbalancer.UDP, From: ap("10.0.1.2:53"), To: ap("10.0.0.254:20002"), Peer: ap("203.0.113.8:5353"), Reverse: true, State: loadbalancer.StateUDP, IdleSecs: 400},
		{Protocol: loadbalancer.TCP, From: ap("[2001:db8::2]:443"), To: ap("[2001:db8::fe]:20003"), Peer: ap("[2001:db8::99]:40000"), Reverse: true, State: loadbalancer.StateSynSent, IdleSecs: 1.5},
		{Protocol: loadbalancer.TCP, From: ap("[2001:db8::99]:40000"), To: ap("[2001:db8::1]:443"), Peer: ap("[2001:db8::fe]:20003"), State: loadbalancer.StateSynSent, IdleSecs: 1},
		{Protocol: loadbalancer.TCP, From: ap("203.0.113.9:6000"), To: ap("10.0.0.1:80"), Peer: ap("10.0.0.254:20004"), State: loadbalancer.StateFin},
	}
}

func TestWriteConns(t *testing.T) {
	// IPVS's timeouts, so that the expiry column reads as ipvsadm's
	rows := ConnRows(fixtureConns(), (&config.Config{Timeouts: &config.Timeouts{Profile: "ipvs"}}).TimeoutSettings())
	for _, tc := range []struct {
		name string
		opts ListOptions
		want string
	}{
		{"-L -n -c", ListOptions{Numeric: true, Connection: true}, wantConns},
		{"-L -c --persistent-conn", ListOptions{Connection: true, PersistentConn: true}, wantConnspc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteConns(&b, rows, tc.opts); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestLargenum(t *testing.T) {
	for _, tc := range []struct {
		have  uint64
		exact bool
		want  string
	}{
		{0, false, "        0"},
		{99_999_999, false, " 99999999"},
		{100_000_000, false, "  100000K"},
		{999_999_999, false, "  999999K"},
		{1_000_000_000, false, "    1000M"},
		{99_999_999_999, false, "   99999M"},
		{100_000_000_000, false, "     100G"},
		{99_999_999_999_999, false, "   99999G"},
		{100_000_000_000_000, false, "     100T"},
		{18_446_744_073_709_551_615, false, "18446744T"},
		{0, true, "        0"},
		{12_345_678, true, " 12345678"},
		{123_456_789, true, " 123456789"},
		{18_446_744_073_709_551_615, true, " 18446744073709551615"},
	} {
		var b strings.Builder
		largenum(&b, tc.have, tc.exact)
		if b.String() != tc.want {
			t.Errorf("largenum(%d, exact %v) = %q, want %q", tc.have, tc.exact, b.String(), tc.want)
		}
	}
}

// TestConnRowsServiceTimeout: an entry that carries its own timeout (its
// service's, from the data path) expires by it, not by the global one.
func TestConnRowsServiceTimeout(t *testing.T) {
	ap := netip.MustParseAddrPort
	conns := []api.Conn{
		{Protocol: loadbalancer.TCP, From: ap("203.0.113.7:5000"), To: ap("10.0.0.1:80"), Peer: ap("10.0.0.254:20001"),
			State: loadbalancer.StateEstablished, IdleSecs: 2, TimeoutSecs: 60},
		{Protocol: loadbalancer.TCP, From: ap("203.0.113.8:5000"), To: ap("10.0.0.1:81"), Peer: ap("10.0.0.254:20002"),
			State: loadbalancer.StateEstablished, IdleSecs: 2},
	}
	rows := ConnRows(conns, loadbalancer.DefaultSettings())
	if len(rows) != 2 || rows[0].Expire != 58*time.Second || rows[1].Expire != 898*time.Second {
		t.Fatalf("rows %+v, want 58s left by the service's 60 s and 898s by the global 900 s", rows)
	}
}
