// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// valid is a valid configuration that the test rows change one line of.
const valid = `interfaces: [eth0, eth1]
services:
  - name: web
    vip: 10.0.0.1
    port: 80
    protocol: tcp
    scheduler: rr
    mode: fullnat
    local_ips: [10.0.2.254]
    reals:
      - {address: 10.0.2.1, port: 8080, weight: 1}
      - {address: 10.0.2.2, port: 8080}
`

// with returns valid with the first old replaced by new.
func with(t testing.TB, old, new string) string {
	t.Helper()
	if !strings.Contains(valid, old) {
		t.Fatalf("the valid configuration has no %q", old)
	}
	return strings.Replace(valid, old, new, 1)
}

// addService returns valid with one more service, in flow style.
func addService(svc string) string { return valid + "  - " + svc + "\n" }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want string // substring of the error; "" = parses
	}{
		{"valid", valid, ""},
		{"unknown top-level key", valid + "servces: []\n", `line 13: unknown key "servces" at the top level`},
		{"unknown service key", strings.Replace(valid, "    port: 80\n", "    port: 80\n    prot: tcp\n", 1), `line 6: unknown key "prot" in a service`},
		{"unknown real key", strings.Replace(valid, "port: 8080}", "port: 8080, wieght: 2}", 1), `unknown key "wieght" in a real`},
		{"unknown timeouts key", valid + "timeouts: {tcp: 900, tcpfin: 120}\n", "line 13: field tcpfin not found"},
		{"unknown conn_table key", valid + "conn_table: {ipv4: 1000, ip6: 1000}\n", `line 13: unknown key "ip6" in conn_table`},
		{"wrong type", strings.Replace(valid, "port: 80\n", "port: eighty\n", 1), `services[0].port (line 5): want a number, got "eighty"`},
		{"wrong type in a real", strings.Replace(valid, "port: 8080}", "port: 8080, weight: heavy}", 1), `services[0].reals[1].weight (line 12): want a number, got "heavy"`},
		{"a string for a list", strings.Replace(valid, "interfaces: [eth0, eth1]", "interfaces: eth0", 1), `interfaces (line 1): want a list, got "eth0"`},
		{"a list for a string", strings.Replace(valid, "protocol: tcp", "protocol: [tcp]", 1), `services[0].protocol (line 6): want a string, got a list`},
		{"a tab", "interfaces: [eth0]\nservices:\n\t- vip: 10.0.0.1\n", "line 3, column 1: a tab; YAML indents with spaces only"},
		{"syntax error", "interfaces: [eth0\n", "parse configuration: line"},
		{"bad indentation", "interfaces: [eth0]\n services: []\n", "parse configuration: line 1: did not find expected key"},
		{"empty", "", "the document is empty"},
		{"blank", " \n\n", "the document is empty"},
		{"only comments", "# nothing yet\n", "the document is empty"},
		{"null", "~\n", "the document is empty"},
		{"two documents", valid + "---\ninterfaces: [eth2]\n", "a second YAML document"},
		{"not a mapping", "- eth0\n", "want a mapping, got a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.have))
			checkErr(t, err, tc.want)
		})
	}
}

// checkErr fails unless err contains want, or is nil when want is "".
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error:\n%v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one with %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error:\n%v\ndoes not contain %q", err, want)
	}
}

func TestValidate(t *testing.T) {
	localIPs := func(n int) string {
		var ips []string
		for i := 1; i <= n; i++ {
			ips = append(ips, fmt.Sprintf("10.0.%d.%d", 3+i/250, i%250+1))
		}
		return "local_ips: [" + strings.Join(ips, ", ") + "]"
	}
	tooMany, most := localIPs(loadbalancer.MaxServiceLocalIPs+1), localIPs(loadbalancer.MaxServiceLocalIPs)
	for _, tc := range []struct {
		name string
		have string
		want string // substring of the error; "" = valid
	}{
		{"valid", valid, ""},
		{"no interfaces", with(t, "[eth0, eth1]", "[]"), "interfaces: at least one interface is required"},
		{"interfaces left out", strings.TrimPrefix(valid, "interfaces: [eth0, eth1]\n"), "interfaces: at least one interface is required"},
		{"empty interface name", with(t, "[eth0, eth1]", `[eth0, ""]`), `interfaces[1]: "" is not an interface name: empty`},
		{"interface name too long", with(t, "[eth0, eth1]", "[eth0, abcdefghijklmnop]"), `interfaces[1]: "abcdefghijklmnop" is not an interface name: longer than 15`},
		{"interface name with a slash", with(t, "[eth0, eth1]", "[eth0, a/b]"), `interfaces[1]: "a/b" is not an interface name`},
		{"interface twice", with(t, "[eth0, eth1]", "[eth0, eth0]"), `interfaces[1]: "eth0" is also interfaces[0]`},
		{"xdp mode native", valid + "xdp_mode: native\n", ""},
		{"xdp mode generic", valid + "xdp_mode: generic\n", ""},
		{"bad xdp mode", valid + "xdp_mode: turbo\n", `xdp_mode: "turbo" is not an XDP mode (want native or generic)`},
		{"workers", valid + "workers: {cpus: [1, 0], queue: 4096}\n", ""},
		{"workers without CPUs", valid + "workers: {queue: 4096}\n", "workers.cpus: is empty"},
		{"worker CPU twice", valid + "workers: {cpus: [1, 1]}\n", "workers: worker CPU 1 is given twice"},
		{"worker queue too long", valid + "workers: {cpus: [0], queue: 20000}\n", "workers: worker queue of 20000 frames: want 1-16384"},
		{"workers in generic mode", valid + "xdp_mode: generic\nworkers: {cpus: [0]}\n", "workers: take native XDP"},
		{"timeouts", valid + "timeouts: {tcp: 1, tcp_fin: 120, udp: 31536000}\n", ""},
		{"some timeouts", valid + "timeouts: {udp: 60}\n", ""},
		{"zero timeout", valid + "timeouts: {tcp: 0}\n", "timeouts.tcp: 0 is out of range (want 1 to 31536000 seconds)"},
		{"negative timeout", valid + "timeouts: {tcp_fin: -5}\n", "timeouts.tcp_fin: -5 is out of range"},
		{"timeout over a year", valid + "timeouts: {udp: 31536001}\n", "timeouts.udp: 31536001 is out of range"},
		{"every state's timeout", valid + "timeouts: {profile: dpvs, tcp: 90, tcp_syn: 5, tcp_fin: 7, tcp_close: 1, udp: 30}\n", ""},
		{"zero close timeout", valid + "timeouts: {tcp_close: 0}\n", "timeouts.tcp_close: 0 is out of range"},
		{"unknown profile", valid + "timeouts: {profile: lvs}\n", `timeouts.profile: "lvs" is not a set of timeouts (want one of xlb, ipvs, dpvs)`},
		{"service timeouts", strings.Replace(valid, "    port: 80\n", "    port: 80\n    timeouts: {profile: dpvs, tcp_fin: 2}\n", 1), ""},
		{"service timeout out of range", strings.Replace(valid, "    port: 80\n", "    port: 80\n    timeouts: {tcp: 0}\n", 1), "services[0].timeouts.tcp: 0 is out of range"},
		{"service timeouts profile", strings.Replace(valid, "    port: 80\n", "    port: 80\n    timeouts: {profile: x}\n", 1), `services[0].timeouts.profile: "x" is not a set of timeouts`},
		{"port range", valid + "local_port_range: 1-65535\n", ""},
		{"conn_table", valid + "conn_table: {ipv4: 16, ipv6: 268435456}\n", ""},
		{"conn_table zero is the default", valid + "conn_table: {ipv4: 0}\n", ""},
		{"conn_table too small", valid + "conn_table: {ipv4: 15}\n", "conn_table.ipv4: 15 is out of range (want 16 to 268435456 connections, or 0 for the default 1048576)"},
		{"conn_table too large", valid + "conn_table: {ipv6: 268435457}\n", "conn_table.ipv6: 268435457 is out of range"},
		{"conn_table negative", valid + "conn_table: {ipv6: -1}\n", "conn_table.ipv6: -1 is out of range"},
		{"port range of one port", valid + "local_port_range: 5000-5000\n", ""},
		{"port range reversed", valid + "local_port_range: 2000-1000\n", `local_port_range: "2000-1000" is not FIRST-LAST with 1 <= FIRST <= LAST <= 65535`},
		{"port range from 0", valid + "local_port_range: 0-1000\n", `local_port_range: "0-1000" is not FIRST-LAST`},
		{"port range too high", valid + "local_port_range: 1025-65536\n", `local_port_range: "1025-65536" is not FIRST-LAST`},
		{"port range not a range", valid + "local_port_range: 1025\n", `local_port_range: "1025" is not FIRST-LAST`},
		{"vip not an IP", with(t, "vip: 10.0.0.1", "vip: 10.0.0.300"), `services[0].vip: "10.0.0.300" is not an IP address`},
		{"vip missing", with(t, "    vip: 10.0.0.1\n", ""), "services[0].vip: an IP address is required"},
		{"vip IPv4-mapped", with(t, "vip: 10.0.0.1", `vip: "::ffff:10.0.0.1"`), "services[0].vip: ::ffff:10.0.0.1 is an IPv4-mapped IPv6 address; write it as 10.0.0.1"},
		{"vip unspecified", with(t, "vip: 10.0.0.1", "vip: 0.0.0.0"), "services[0].vip: 0.0.0.0 is the unspecified address, which cannot be a VIP"},
		{"vip with a zone", with(t, "vip: 10.0.0.1", `vip: "fe80::1%eth0"`), "services[0].vip: fe80::1%eth0 has a zone"},
		{"port 0", with(t, "port: 80\n", "port: 0\n"), "services[0].reals[0].port: 8080: a port-0 service keeps the client's port"},
		{"port 65535", with(t, "port: 80\n", "port: 65535\n"), ""},
		{"port negative", with(t, "port: 80\n", "port: -1\n"), "services[0].port: -1 is not a port (want 0 to 65535; 0 = every port of the VIP)"},
		{"port too big", with(t, "port: 80\n", "port: 65536\n"), "services[0].port: 65536 is not a port"},
		{"protocol udp", with(t, "protocol: tcp", "protocol: udp"), ""},
		{"protocol sctp", with(t, "protocol: tcp", "protocol: sctp"), `services[0].protocol: "sctp" is not a protocol (want tcp or udp)`},
		{"protocol missing", with(t, "    protocol: tcp\n", ""), `services[0].protocol: "" is not a protocol`},
		{"scheduler wrr", with(t, "scheduler: rr", "scheduler: wrr"), ""},
		{"scheduler mh", with(t, "scheduler: rr", "scheduler: mh"), ""},
		{"scheduler sh", with(t, "scheduler: rr", "scheduler: sh"), ""},
		{"scheduler left out", with(t, "    scheduler: rr\n", ""), ""},
		{"unknown scheduler", with(t, "scheduler: rr", "scheduler: fifo"), `services[0].scheduler: unknown scheduler "fifo" (want rr, wrr, mh, sh, lc or wlc)`},
		{"lc", with(t, "scheduler: rr", "scheduler: lc"), ""},
		{"wlc", with(t, "scheduler: rr", "scheduler: wlc"), ""},
		{"lblc not yet", with(t, "scheduler: rr", "scheduler: lblc"), `services[0].scheduler: "lblc" is not supported yet`},
		{"persistent", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 300"), ""},
		{"persistent with a dotted mask", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 300\n    netmask: 255.255.255.0"), ""},
		{"persistent with a prefix", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 300\n    netmask: /24"), ""},
		{"persistent negative", with(t, "scheduler: rr", "scheduler: rr\n    persistent: -1"), "services[0].persistent: -1 seconds: want 0 (off) to 31536000"},
		{"netmask without persistence", with(t, "scheduler: rr", "scheduler: rr\n    netmask: 24"), "services[0].netmask: only means something with persistent: SECONDS"},
		{"netmask with holes", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 60\n    netmask: 255.0.255.0"), `services[0].netmask: "255.0.255.0" is not a netmask (its ones must come first)`},
		{"netmask too long", with(t, "scheduler: rr", "scheduler: rr\n    persistent: 60\n    netmask: 33"), `services[0].netmask: "33": want a prefix length 0 to 32 or a dotted IPv4 mask`},
		{"tcp check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, interval: 1s, timeout: 500ms, rise: 2, fall: 2}"), ""},
		{"http check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: http, path: /health, expect_status: 204, expect_body: ok, on_fail: reset}"), ""},
		{"exec check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: exec, command: /bin/true, interval: 3}"), ""},
		{"udp check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: udp, send: ping, expect: pong}"), ""},
		{"unknown check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: icmp}"), `services[0].health_check.type: "icmp": want one of tcp, http, https, udp, exec`},
		{"check timeout over interval", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, interval: 1s, timeout: 2s}"), "services[0].health_check.timeout: 2s: want 1ms to the interval (1s)"},
		{"check rise 0 is the default", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, rise: 0}"), ""},
		{"check fall too high", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, fall: 1000}"), "services[0].health_check.fall: 1000: want 1 to 100"},
		{"path on a tcp check", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, path: /x}"), "services[0].health_check.path: only http and https checks use it (this one is tcp)"},
		{"exec without command", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: exec}"), "services[0].health_check.command: an exec check needs a command"},
		{"bad on_fail", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, on_fail: drop}"), `services[0].health_check.on_fail: "drop": want keep or reset`},
		{"mode left out", with(t, "    mode: fullnat\n", ""), ""},
		{"dr not yet", with(t, "mode: fullnat", "mode: dr"), `services[0].mode: "dr" is not supported yet (fullnat is)`},
		{"nat not yet", with(t, "mode: fullnat", "mode: nat"), `services[0].mode: "nat" is not supported yet`},
		{"tunnel not yet", with(t, "mode: fullnat", "mode: tunnel"), `services[0].mode: "tunnel" is not supported yet`},
		{"unknown mode", with(t, "mode: fullnat", "mode: snat"), `services[0].mode: unknown mode "snat" (want fullnat)`},
		{"fullnat without local IPs (added later, as DPVS)", with(t, "    local_ips: [10.0.2.254]\n", ""), ""},
		{"the most local IPs", with(t, "local_ips: [10.0.2.254]", most), ""},
		{"too many local IPs", with(t, "local_ips: [10.0.2.254]", tooMany), fmt.Sprintf("services[0].local_ips: %d local IPs; a service has at most %d", loadbalancer.MaxServiceLocalIPs+1, loadbalancer.MaxServiceLocalIPs)},
		{"local IP range", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.100-149, 10.0.4.1]"), ""},
		{"local IP range of one", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.7-7]"), ""},
		{"local IP range too many", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.0-255, 10.0.4.1]"),
			"services[0].local_ips: 257 local IPs; a service has at most 256"},
		{"local IP range reversed", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.100-99]"),
			`services[0].local_ips[0]: "10.0.3.100-99": the range ends below its first address`},
		{"local IP range past 255", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.100-300]"),
			`services[0].local_ips[0]: "10.0.3.100-300": "300" is not the last octet (0-255)`},
		{"local IP range not an address", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3-9]"),
			`services[0].local_ips[0]: "10.0.3-9": "10.0.3" is not an IP address`},
		{"local IP range overlapping", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.3.1-5, 10.0.3.4]"),
			"services[0].local_ips[1]: 10.0.3.4 is also local_ips[0]"},
		{"local IP not an IP", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.2.254, nope]"), `services[0].local_ips[1]: "nope" is not an IP address`},
		{"local IP of the other family", with(t, "local_ips: [10.0.2.254]", `local_ips: ["fd00::1"]`), "services[0].local_ips[0]: fd00::1 is IPv6 but the VIP 10.0.0.1 is IPv4"},
		{"local IP IPv4-mapped", with(t, "local_ips: [10.0.2.254]", `local_ips: ["::ffff:10.0.2.254"]`), "services[0].local_ips[0]: ::ffff:10.0.2.254 is an IPv4-mapped IPv6 address"},
		{"local IP twice", with(t, "local_ips: [10.0.2.254]", "local_ips: [10.0.2.254, 10.0.2.254]"), "services[0].local_ips[1]: 10.0.2.254 is also local_ips[0]"},
		{"real address bad", with(t, "address: 10.0.2.2,", "address: 10.0.0.300,"), `services[0].reals[1].address: "10.0.0.300" is not an IP address`},
		{"real address IPv6 for an IPv4 VIP", with(t, "address: 10.0.2.2,", `address: "2001:db8::1",`), "services[0].reals[1].address: 2001:db8::1 is IPv6 but the VIP 10.0.0.1 is IPv4"},
		{"real address IPv4-mapped", with(t, "address: 10.0.2.2,", `address: "::ffff:10.0.2.2",`), "services[0].reals[1].address: ::ffff:10.0.2.2 is an IPv4-mapped IPv6 address"},
		{"real port 0", with(t, "port: 8080}", "port: 0}"), ""},
		{"real port negative", with(t, "port: 8080, weight: 1}", "port: -1, weight: 1}"), "services[0].reals[0].port: -1 is not a port"},
		{"real port too big", with(t, "port: 8080}", "port: 65536}"), "services[0].reals[1].port: 65536 is not a port"},
		{"port-0 service with port-0 reals", strings.ReplaceAll(with(t, "port: 80\n", "port: 0\n"), "port: 8080", "port: 0"), ""},
		{"port-0 service with a real port", strings.Replace(with(t, "port: 80\n", "port: 0\n"), "port: 8080,", "port: 0,", 1), "services[0].reals[1].port: 8080: a port-0 service keeps the client's port, so its reals need port 0"},
		{"weight 0 drains", with(t, "weight: 1}", "weight: 0}"), ""},
		{"weight 65535", with(t, "weight: 1}", "weight: 65535}"), ""},
		{"weight negative", with(t, "weight: 1}", "weight: -1}"), "services[0].reals[0].weight: -1 is out of range (want 0 to 65535; 0 drains)"},
		{"weight too high", with(t, "weight: 1}", "weight: 65536}"), "services[0].reals[0].weight: 65536 is out of range"},
		{"duplicate service", addService("{vip: 10.0.0.1, port: 80, protocol: tcp, local_ips: [10.0.2.254]}"), "services[1]: duplicates services[0] (tcp 10.0.0.1:80)"},
		{"same VIP and port, other protocol", addService("{vip: 10.0.0.1, port: 80, protocol: udp, local_ips: [10.0.2.254]}"), ""},
		{"duplicate IPv6 service spelt differently", addService(`{vip: "2001:db8::1", port: 80, protocol: tcp, local_ips: ["2001:db8::fe"]}`) + "  - " + `{vip: "2001:DB8:0::1", port: 80, protocol: tcp, local_ips: ["2001:db8::fe"]}` + "\n", "services[2]: duplicates services[1] (tcp [2001:db8::1]:80)"},
		{"duplicate name", addService("{name: web, vip: 10.0.0.1, port: 443, protocol: tcp, local_ips: [10.0.2.254]}"), `services[1].name: "web" is also the name of services[0]`},
		{"unnamed services", addService("{vip: 10.0.0.2, port: 80, protocol: tcp, local_ips: [10.0.2.254]}") + "  - {vip: 10.0.0.3, port: 80, protocol: tcp, local_ips: [10.0.2.254]}\n", ""},
		{"duplicate real", with(t, "address: 10.0.2.2, port: 8080", "address: 10.0.2.1, port: 8080"), "services[0].reals[1]: 10.0.2.1:8080 is also reals[0]"},
		{"same real address, other port", with(t, "address: 10.0.2.2, port: 8080", "address: 10.0.2.1, port: 8081"), ""},
		{"service without reals", addService("{vip: 10.0.0.1, port: 443, protocol: tcp, local_ips: [10.0.2.254]}"), ""},
		{"IPv6 service", addService(`{vip: "2001:db8::1", port: 80, protocol: tcp, local_ips: ["2001:db8::fe"], reals: [{address: "2001:db8::2", port: 80}]}`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.have))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = c.Validate()
			checkErr(t, err, tc.want)
			var ve *ValidationError
			if err != nil && !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	have := with(t, "vip: 10.0.0.1", "vip: nope") + "xdp_mode: turbo\n"
	have = strings.Replace(have, "weight: 1}", "weight: -3}", 1)
	c, err := Parse([]byte(have))
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := c.Validate(); !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want a *ValidationError", err)
	}
	want := []string{
		`xdp_mode: "turbo" is not an XDP mode (want native or generic)`,
		`services[0].vip: "nope" is not an IP address`,
		"services[0].reals[0].weight: -3 is out of range (want 0 to 65535; 0 drains)",
	}
	if strings.Join(ve.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", ve, strings.Join(want, "\n"))
	}
	if _, err := c.Desired(); !errors.As(err, &ve) {
		t.Errorf("Desired = %v, want the *ValidationError", err)
	}
}

func TestDesired(t *testing.T) {
	d := desired(t, valid)
	if d.Settings != loadbalancer.DefaultSettings() {
		t.Errorf("settings %+v, want the defaults", d.Settings)
	}
	if d.Mode != loadbalancer.ModeNative || strings.Join(d.Interfaces, ",") != "eth0,eth1" {
		t.Errorf("mode %v, interfaces %v", d.Mode, d.Interfaces)
	}
	key := loadbalancer.ServiceKey{VIP: netip.MustParseAddr("10.0.0.1"), Port: 80, Proto: loadbalancer.TCP}
	if len(d.Services) != 1 {
		t.Fatalf("services %+v, want one", d.Services)
	}
	s := d.Services[0]
	if s.Key != key || s.Scheduler != loadbalancer.RoundRobin || len(s.LocalIPs) != 1 || s.LocalIPs[0] != netip.MustParseAddr("10.0.2.254") || s.MaglevSize != 0 {
		t.Errorf("service %+v", s)
	}
	want := []loadbalancer.Real{
		{Addr: netip.MustParseAddr("10.0.2.1"), Port: 8080, Weight: 1},
		{Addr: netip.MustParseAddr("10.0.2.2"), Port: 8080, Weight: 1}, // the default weight
	}
	if got := d.Reals[key]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("reals %+v, want %+v", got, want)
	}

	if d.ConnTable != loadbalancer.DefaultConnTableSizes() {
		t.Errorf("connection tables %+v, want the defaults", d.ConnTable)
	}

	for _, tc := range []struct {
		timeouts string
		want     loadbalancer.StateTimeouts
	}{
		{"{profile: ipvs}", loadbalancer.StateTimeouts{Syn: time.Minute, Established: 900 * time.Second, Fin: 120 * time.Second, Close: 10 * time.Second, UDP: 300 * time.Second}},
		{"{profile: dpvs, tcp_close: 1}", loadbalancer.StateTimeouts{Syn: 30 * time.Second, Established: 90 * time.Second, Fin: 7 * time.Second, Close: time.Second, UDP: 300 * time.Second}},
		{"{tcp_syn: 5}", loadbalancer.StateTimeouts{Syn: 5 * time.Second, Established: 900 * time.Second, Fin: 7 * time.Second, Close: 3 * time.Second, UDP: 300 * time.Second}},
	} {
		st := desired(t, "timeouts: "+tc.timeouts+"\n"+valid).Settings
		got := loadbalancer.StateTimeouts{Syn: st.TCPSynTimeout, Established: st.TCPTimeout, Fin: st.TCPFinTimeout, Close: st.TCPRstTimeout, UDP: st.UDPTimeout}
		if got != tc.want {
			t.Errorf("timeouts %s: %+v, want %+v", tc.timeouts, got, tc.want)
		}
	}

	// a service's own timeouts start from the global ones
	withOwn := "timeouts: {profile: ipvs}\n" + strings.Replace(valid, "    port: 80\n", "    port: 80\n    timeouts: {tcp_fin: 9}\n", 1)
	if got, want := desired(t, withOwn).Services[0].Timeouts, (loadbalancer.StateTimeouts{Syn: time.Minute, Established: 900 * time.Second,
		Fin: 9 * time.Second, Close: 10 * time.Second, UDP: 300 * time.Second}); got != want {
		t.Errorf("service timeouts %+v, want %+v", got, want)
	}
	if got := d.Services[0].Timeouts; got != (loadbalancer.StateTimeouts{}) {
		t.Errorf("a service without timeouts has %+v, want none of its own", got)
	}

	have := "xdp_mode: generic\ntimeouts: {tcp: 600, udp: 60}\nlocal_port_range: 20000-29999\nconn_table: {ipv6: 5000}\n" +
		addService("{vip: 10.0.0.1, port: 443, protocol: udp, scheduler: sh, local_ips: [10.0.2.254]}")
	d = desired(t, have)
	st := d.Settings
	def := loadbalancer.DefaultSettings()
	if st.TCPTimeout != 600*time.Second || st.UDPTimeout != time.Minute || st.TCPFinTimeout != def.TCPFinTimeout ||
		st.LocalPortMin != 20000 || st.LocalPortMax != 29999 || st.TCPSynTimeout != def.TCPSynTimeout {
		t.Errorf("settings %+v", st)
	}
	if d.Mode != loadbalancer.ModeGeneric || len(d.Services) != 2 || d.Services[1].Scheduler != loadbalancer.SourceHash {
		t.Errorf("mode %v, services %+v", d.Mode, d.Services)
	}
	if w := desired(t, valid+"workers: {cpus: [1, 0], queue: 4096}\n").Workers; !w.Equal(loadbalancer.Workers{CPUs: []int{1, 0}, Queue: 4096}) {
		t.Errorf("workers %+v, want CPUs 1 and 0 with queues of 4096", w)
	}
	if w := d.Workers; len(w.CPUs) != 0 {
		t.Errorf("workers %+v without a workers section", w)
	}
	if d.ConnTable != (loadbalancer.ConnTableSizes{IPv4: loadbalancer.DefaultIPv4Conns, IPv6: 5000}) {
		t.Errorf("connection tables %+v, want the default IPv4 size and 5000 IPv6 connections", d.ConnTable)
	}
	udp := loadbalancer.ServiceKey{VIP: key.VIP, Port: 443, Proto: loadbalancer.UDP}
	if reals, ok := d.Reals[udp]; !ok || reals == nil || len(reals) != 0 {
		t.Errorf("reals of a service without any: %#v, %v; want an empty list", reals, ok)
	}
}

func TestLoadExample(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Desired()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Services) != 2 || c.Services[1].Name != "web6" {
		t.Fatalf("services %+v, want web and web6", d.Services)
	}
	web6 := d.Services[1]
	if !web6.Key.VIP.Is6() || web6.Scheduler != loadbalancer.WeightedRoundRobin || web6.LocalIPs[0] != netip.MustParseAddr("2001:db8:1::fe") {
		t.Errorf("web6 %+v", web6)
	}
	if reals := d.Reals[d.Services[0].Key]; len(reals) != 3 || reals[1].Weight != 1 || reals[2].Weight != 0 {
		t.Errorf("reals of web %+v, want weights 2, 1 (default) and 0", reals)
	}
	if d.Settings != loadbalancer.DefaultSettings() {
		t.Errorf("settings %+v: the example sets the defaults", d.Settings)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(dir, "missing.yaml"), "missing.yaml: no such file"},
		{"unknown key", write("typo.yaml", valid+"servces: []\n"), `typo.yaml: parse configuration: line 13: unknown key "servces" at the top level`},
		{"one problem", write("one.yaml", with(t, "[eth0, eth1]", "[]")), "one.yaml: interfaces: at least one interface is required"},
		{"problems", write("two.yaml", with(t, "[eth0, eth1]", "[]")+"xdp_mode: x\n"), "two.yaml: 2 problems:\ninterfaces: at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.path)
			if c != nil {
				t.Errorf("Load returned a configuration with the error")
			}
			checkErr(t, err, tc.want)
		})
	}
}

func TestClone(t *testing.T) {
	c, err := Parse([]byte(valid + "timeouts: {tcp: 0}\nconn_table: {ipv4: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Clone()
	*d.Services[0].Reals[0].Weight = 9
	d.Services[0].LocalIPs[0] = "10.0.2.253"
	d.Interfaces[0] = "eth9"
	d.Timeouts.UDP = 5
	d.ConnTable.IPv4 = 200
	if *c.Services[0].Reals[0].Weight != 1 || c.Services[0].LocalIPs[0] != "10.0.2.254" || c.Interfaces[0] != "eth0" ||
		c.Timeouts.UDP != 0 || c.ConnTable.IPv4 != 100 {
		t.Error("changing the clone changed the original")
	}
	// the clone keeps which timeouts the file gave: tcp: 0 stays an error
	checkErr(t, d.Validate(), "timeouts.tcp: 0 is out of range")
	if (*Config)(nil).Clone() == nil {
		t.Error("a nil configuration cloned to nil")
	}
}

// TestShippedExamples keeps every file of examples/ valid, and
// docs/config.md's example the same as examples/xlb.yaml.
func TestShippedExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		c, err := Load(f)
		if err == nil {
			_, err = c.Desired()
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, example, _ := strings.Cut(string(doc), "\n## Example\n")
	_, example, _ = strings.Cut(example, "```yaml\n")
	example, _, _ = strings.Cut(example, "```")
	file, err := os.ReadFile("../../examples/xlb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if example != string(file) {
		t.Errorf("docs/config.md's example is not examples/xlb.yaml:\n%s", example)
	}
}

// TestParseHealthCheckErrors: a health_check the YAML decoder refuses
// names the line and what is wrong.
func TestParseHealthCheckErrors(t *testing.T) {
	for _, tc := range []struct{ name, have, want string }{
		{"bad duration", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, interval: soon}"), `line 8: "soon" is not a duration`},
		{"unknown key", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, colour: red}"), `line 8: unknown key "colour" in a health_check`},
		{"duration not a scalar", with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, timeout: [1]}"), "line 8: want a duration such as 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.have))
			checkErr(t, err, tc.want)
		})
	}
}
