// SPDX-License-Identifier: Apache-2.0

package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
)

const valid = `
interfaces: [eth0, eth1]
services:
  - name: web
    vip: 10.100.0.10
    port: 80
    protocol: tcp
    scheduler: rr
    mode: fullnat
    local_ips: [10.100.2.254]
    reals:
      - {address: 10.100.2.1, port: 8080, weight: 1}
      - {address: 10.100.2.2, port: 8080}
`

// with returns the valid configuration with one line replaced.
func with(old, new string) string {
	if !strings.Contains(valid, old) {
		panic("no " + old)
	}
	return strings.Replace(valid, old, new, 1)
}

func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want string // substring of the error; "" = valid
	}{
		{"valid", valid, ""},
		{"unknown top-level key", valid + "servces: []\n", "field servces not found"},
		{"unknown service key", with("    port: 80\n", "    port: 80\n    prot: tcp\n"), "field prot not found"},
		{"yaml syntax", "interfaces: [eth0\n", "configuration:"},
		{"empty document", "  \n", "configuration is empty"},
		{"no interfaces", with("interfaces: [eth0, eth1]", "interfaces: []"), "interfaces: at least one interface is required"},
		{"empty interface name", with("interfaces: [eth0, eth1]", `interfaces: [eth0, ""]`), `interfaces[1]: "" is not an interface name`},
		{"bad xdp mode", valid + "xdp_mode: turbo\n", `xdp_mode: "turbo": want native or generic`},
		{"negative timeout", valid + "timeouts: {tcp: -1}\n", "timeouts.tcp: -1"},
		{"bad port range", valid + "local_port_range: 2000-1000\n", `local_port_range: "2000-1000"`},
		{"bad vip", with("vip: 10.100.0.10", "vip: 10.100.0.300"), `services[0].vip: "10.100.0.300" is not an IP address`},
		{"mapped vip", with("vip: 10.100.0.10", "vip: ::ffff:10.100.0.10"), "services[0].vip: ::ffff:10.100.0.10 is an IPv4-mapped"},
		{"port too big", with("port: 80\n", "port: 70000\n"), "services[0].port: 70000 is not a port"},
		{"bad protocol", with("protocol: tcp", "protocol: sctp"), `services[0].protocol: "sctp": want tcp or udp`},
		{"unknown scheduler", with("scheduler: rr", "scheduler: fifo"), `services[0].scheduler: unknown scheduler "fifo"`},
		{"lc not yet", with("scheduler: rr", "scheduler: wlc"), `services[0].scheduler: "wlc" is not supported yet`},
		{"dr not yet", with("mode: fullnat", "mode: dr"), `services[0].mode: "dr" is not supported yet`},
		{"fullnat without local ips", with("    local_ips: [10.100.2.254]\n", ""), "services[0].local_ips: fullnat needs at least one local IP"},
		{"too many local ips", with("local_ips: [10.100.2.254]", "local_ips: [10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6, 10.0.0.7, 10.0.0.8, 10.0.0.9]"), "services[0].local_ips: 9 local IPs: at most 8"},
		{"local ip of the other family", with("local_ips: [10.100.2.254]", "local_ips: [fd00::1]"), "services[0].local_ips[0]: fd00::1 is IPv6 but the VIP 10.100.0.10 is IPv4"},
		{"local ip twice", with("local_ips: [10.100.2.254]", "local_ips: [10.100.2.254, 10.100.2.254]"), "services[0].local_ips[1]: 10.100.2.254 is also local_ips[0]"},
		{"bad real address", with("address: 10.100.2.2,", "address: 10.0.0.300,"), `services[0].reals[1].address: "10.0.0.300" is not an IP address`},
		{"real of the other family", with("address: 10.100.2.2,", "address: 2001:db8::1,"), "services[0].reals[1].address: 2001:db8::1 is IPv6 but the VIP 10.100.0.10 is IPv4"},
		{"real port", with("port: 8080, weight: 1", "port: -1, weight: 1"), "services[0].reals[0].port: -1 is not a port"},
		{"weight too high", with("weight: 1}", "weight: 70000}"), "services[0].reals[0].weight: 70000: want 0 to 65535"},
		{"negative weight", with("weight: 1}", "weight: -1}"), "services[0].reals[0].weight: -1"},
		{"real twice", with("address: 10.100.2.2, port: 8080", "address: 10.100.2.1, port: 8080"), "services[0].reals[1]: 10.100.2.1:8080 is also reals[0]"},
		{"port-0 service with real port", with("port: 80\n", "port: 0\n"), "services[0].reals[0].port: 8080: a port-0 service keeps the client's port"},
		{"duplicate service", valid + "  - {vip: 10.100.0.10, port: 80, protocol: tcp, local_ips: [10.100.2.254]}\n", "services[1]: duplicates services[0] (tcp 10.100.0.10:80)"},
		{"duplicate name", valid + "  - {name: web, vip: 10.100.0.10, port: 81, protocol: tcp, local_ips: [10.100.2.254]}\n", `services[1].name: "web" is also the name of services[0]`},
		{"service without reals", valid + "  - {vip: 10.100.0.10, port: 443, protocol: tcp, local_ips: [10.100.2.254]}\n", ""},
		{"every problem reported", with("vip: 10.100.0.10", "vip: nope") + "xdp_mode: x\n", "xdp_mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.have))
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	c, err := Parse([]byte(valid + "timeouts: {tcp: 600}\nlocal_port_range: 2000-3000\nxdp_mode: generic\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Desired()
	if err != nil {
		t.Fatal(err)
	}
	key := datapath.ServiceKey{VIP: netip.MustParseAddr("10.100.0.10"), Port: 80, Proto: datapath.TCP}
	if len(d.Services) != 1 || d.Services[0].Key != key || d.Services[0].Scheduler != datapath.RoundRobin {
		t.Errorf("services %+v", d.Services)
	}
	reals := d.Reals[key]
	if len(reals) != 2 || reals[1].Weight != 1 || reals[1].Addr != netip.MustParseAddr("10.100.2.2") {
		t.Errorf("reals %+v, want the second with the default weight 1", reals)
	}
	s := d.Settings
	if s.TCPTimeout != 600*time.Second || s.UDPTimeout != 300*time.Second || s.LocalPortMin != 2000 || s.LocalPortMax != 3000 {
		t.Errorf("settings %+v", s)
	}
	if d.Mode != datapath.ModeGeneric {
		t.Errorf("mode %v, want generic", d.Mode)
	}
}

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

func TestDiff(t *testing.T) {
	base := desired(t, valid)
	key := base.Services[0].Key
	for _, tc := range []struct {
		name string
		from *Desired
		to   string
		want string // Changes.String()
	}{
		{"from nothing", nil, valid, "add service tcp 10.100.0.10:80 (rr, local IPs [10.100.2.254])\nset reals of tcp 10.100.0.10:80: [10.100.2.1:8080 w1, 10.100.2.2:8080 w1]"},
		{"identical", base, valid, ""},
		{"reals reordered", base, strings.Replace(strings.Replace(valid, "10.100.2.1,", "10.100.2.X,", 1), "10.100.2.2,", "10.100.2.1,", 1), ""}, // order does not matter
		{"weight changed", base, with("weight: 1}", "weight: 0}"), "set reals of tcp 10.100.0.10:80: [10.100.2.1:8080 w0, 10.100.2.2:8080 w1]"},
		{"scheduler changed", base, with("scheduler: rr", "scheduler: mh"), "update service tcp 10.100.0.10:80 (mh, local IPs [10.100.2.254])"},
		{"service removed", base, "interfaces: [eth0, eth1]\nservices: []\n", "remove service tcp 10.100.0.10:80"},
		{"timeout changed", base, valid + "timeouts: {udp: 60}\n", "settings:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := strings.Replace(tc.to, "10.100.2.X,", "10.100.2.2,", 1)
			got := Diff(tc.from, desired(t, to)).String()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("changes:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	if !Diff(base, base).Empty() {
		t.Error("a configuration differs from itself")
	}
	if c := Diff(base, desired(t, with("weight: 1}", "weight: 3}"))); len(c.Add)+len(c.Update)+len(c.Remove) != 0 || len(c.SetReals[key]) != 2 {
		t.Errorf("a weight change did more than set the reals: %+v", c)
	}
}

func TestLoadExample(t *testing.T) {
	c, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != 3 {
		t.Errorf("%d services, want 3", len(c.Services))
	}
	if _, err := Load("testdata/missing.yaml"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c, _ := Parse([]byte(valid))
	d := c.Clone()
	*d.Services[0].Reals[0].Weight = 9
	d.Services[0].LocalIPs[0] = "x"
	if *c.Services[0].Reals[0].Weight != 1 || c.Services[0].LocalIPs[0] != "10.100.2.254" {
		t.Error("changing the clone changed the original")
	}
}
