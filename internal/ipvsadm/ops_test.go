// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
)

func parse(t *testing.T, line string) *Command {
	t.Helper()
	c, err := Parse(strings.Fields(line))
	if err != nil {
		t.Fatalf("Parse(%q): %v", line, err)
	}
	return c
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want string // method, path and JSON body
	}{
		{"add service", "-A -t 10.0.0.1:80 -s rr", `POST /v1/services {"vip":"10.0.0.1","port":80,"protocol":"tcp","scheduler":"rr","mode":"fullnat"}`},
		{"add service with all", "-A -u [2001:db8::1]:53 -s sh -p 60 -M 64 -z 2001:db8::fe",
			`POST /v1/services {"vip":"2001:db8::1","port":53,"protocol":"udp","scheduler":"sh","persistent":60,"netmask":"64","mode":"fullnat","local_ips":["2001:db8::fe"]}`},
		{"add service default scheduler", "-A -t 10.0.0.1:80", `POST /v1/services {"vip":"10.0.0.1","port":80,"protocol":"tcp","scheduler":"wlc","mode":"fullnat"}`},
		{"edit service sets all three", "-E -t 10.0.0.1:80 -s wrr", `PUT /v1/services/tcp/10.0.0.1/80 {"netmask":"","persistent":0,"scheduler":"wrr"}`},
		{"edit service persistent", "-E -t 10.0.0.1:80 -s rr -p -M 255.255.0.0", `PUT /v1/services/tcp/10.0.0.1/80 {"netmask":"255.255.0.0","persistent":300,"scheduler":"rr"}`},
		{"delete service", "-D -u [2001:db8::1]:53", `DELETE /v1/services/udp/2001:db8::1/53 null`},
		{"add real", "-a -t 10.0.0.1:80 -r 10.0.1.1 -w 3", `POST /v1/services/tcp/10.0.0.1/80/reals {"address":"10.0.1.1","port":80,"weight":3}`},
		{"add real weight 0", "-a -t 10.0.0.1:80 -r 10.0.1.1:8080 -b -w 0", `POST /v1/services/tcp/10.0.0.1/80/reals {"address":"10.0.1.1","port":8080,"weight":0}`},
		{"edit real", "-e -t 10.0.0.1:80 -r 10.0.1.1:8080 -w 7", `PUT /v1/services/tcp/10.0.0.1/80/reals/10.0.1.1/8080 {"weight":7}`},
		{"edit real default weight", "-e -t 10.0.0.1:80 -r 10.0.1.1:8080", `PUT /v1/services/tcp/10.0.0.1/80/reals/10.0.1.1/8080 {"weight":1}`},
		{"delete real IPv6", "-d -t [2001:db8::1]:80 -r [2001:db8::2]:8080", `DELETE /v1/services/tcp/2001:db8::1/80/reals/2001:db8::2/8080 null`},
		{"add laddr", "-P -t 10.0.0.1:80 -z 10.0.0.253 -F eth0", `POST /v1/services/tcp/10.0.0.1/80/laddrs {"address":"10.0.0.253"}`},
		{"del laddr", "-Q -t 10.0.0.1:80 -z 10.0.0.253", `DELETE /v1/services/tcp/10.0.0.1/80/laddrs/10.0.0.253 null`},
		{"add laddr range", "-P -t 10.0.0.1:80 -z 10.0.3.100-149", `POST /v1/services/tcp/10.0.0.1/80/laddrs {"address":"10.0.3.100-149"}`},
		{"del laddr range", "-Q -t [2001:db8::1]:80 -z 2001:db8::100-1ff", `DELETE /v1/services/tcp/2001:db8::1/80/laddrs/2001:db8::100-1ff null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parse(t, tc.have).Request()
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Method + " " + r.Path + " " + string(body); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	for _, line := range []string{"-L", "-C", "--set 1 2 3", "-Z", "-S", "-R", "-G"} {
		if _, err := parse(t, line).Request(); err == nil {
			t.Errorf("%s: Request made one request; want an error", line)
		}
	}
}

const restoreBase = `interfaces: [eth0]
services:
  - {vip: 10.0.0.1, port: 80, protocol: tcp, scheduler: rr, local_ips: [10.0.0.254], reals: [{address: 10.0.1.1, port: 80}]}
`

func TestApplyTo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string // ipvsadm lines, one a line
		wantErr string
		check   func(c *config.Config) bool
	}{
		{"add service", "-A -t 10.0.0.2:443 -s mh -z 10.0.0.254", "", func(c *config.Config) bool {
			s := c.Services[1]
			return len(c.Services) == 2 && s.VIP == "10.0.0.2" && s.Port == 443 && s.Scheduler == "mh" && s.LocalIPs[0] == "10.0.0.254"
		}},
		{"add service twice", "-A -t 10.0.0.1:80 -s rr", "service TCP 10.0.0.1:80 exists", nil},
		{"edit service", "-E -t 10.0.0.1:80 -s wrr -p 60", "", func(c *config.Config) bool {
			s := c.Services[0]
			return s.Scheduler == "wrr" && s.Persistent == 60 && len(s.Reals) == 1 && len(s.LocalIPs) == 1
		}},
		{"edit missing service", "-E -t 10.0.0.9:80 -s wrr", "no service TCP 10.0.0.9:80", nil},
		{"delete service", "-D -t 10.0.0.1:80", "", func(c *config.Config) bool { return len(c.Services) == 0 }},
		{"clear", "-C", "", func(c *config.Config) bool { return len(c.Services) == 0 && len(c.Interfaces) == 1 }},
		{"add real", "-a -t 10.0.0.1:80 -r 10.0.1.2 -w 4", "", func(c *config.Config) bool {
			r := c.Services[0].Reals
			return len(r) == 2 && r[1].Address == "10.0.1.2" && r[1].Port == 80 && *r[1].Weight == 4
		}},
		{"add real twice", "-a -t 10.0.0.1:80 -r 10.0.1.1", "real 10.0.1.1:80 exists in service TCP 10.0.0.1:80", nil},
		{"edit real", "-e -t 10.0.0.1:80 -r 10.0.1.1 -w 0", "", func(c *config.Config) bool { return *c.Services[0].Reals[0].Weight == 0 }},
		{"edit missing real", "-e -t 10.0.0.1:80 -r 10.0.1.9 -w 0", "no real 10.0.1.9:80 in service TCP 10.0.0.1:80", nil},
		{"delete real", "-d -t 10.0.0.1:80 -r 10.0.1.1", "", func(c *config.Config) bool { return len(c.Services[0].Reals) == 0 }},
		{"add laddr", "-P -t 10.0.0.1:80 -z 10.0.0.253", "", func(c *config.Config) bool { return len(c.Services[0].LocalIPs) == 2 }},
		{"add laddr twice", "-P -t 10.0.0.1:80 -z 10.0.0.254", "local address 10.0.0.254 exists in service TCP 10.0.0.1:80", nil},
		{"del laddr", "-Q -t 10.0.0.1:80 -z 10.0.0.254", "", func(c *config.Config) bool { return len(c.Services[0].LocalIPs) == 0 }},
		{"del missing laddr", "-Q -t 10.0.0.1:80 -z 10.0.0.9", "no local address 10.0.0.9 in service TCP 10.0.0.1:80", nil},
		{"add laddr range", "-P -t 10.0.0.1:80 -z 10.0.3.100-149", "", func(c *config.Config) bool {
			return len(c.Services[0].LocalIPs) == 2 && c.Services[0].LocalIPs[1] == "10.0.3.100-149"
		}},
		{"set timeouts", "--set 600 0 30", "", func(c *config.Config) bool {
			return c.Timeouts.TCP == 600 && c.Timeouts.TCPFin == 0 && c.Timeouts.UDP == 30
		}},
		{"set keeps what 0 leaves", "--set 600 0 0\n--set 0 60 0", "", func(c *config.Config) bool {
			return c.Timeouts.TCP == 600 && c.Timeouts.TCPFin == 60 && c.Timeouts.UDP == 0
		}},
		{"set nothing", "--set 0 0 0", "", func(c *config.Config) bool { return c.Timeouts == nil }},
		{"a whole table", "-C\n-A -t 10.0.0.3:80 -s rr\n-P -t 10.0.0.3:80 -z 10.0.0.254\n-a -t 10.0.0.3:80 -r 10.0.1.5:8080 -b -w 2", "",
			func(c *config.Config) bool {
				return len(c.Services) == 1 && c.Services[0].VIP == "10.0.0.3" && *c.Services[0].Reals[0].Weight == 2
			}},
		{"an error names its line", "-A -t 10.0.0.3:80 -s rr\n\n-A -t 10.0.0.3:80 -s rr", "line 3: service TCP 10.0.0.3:80 exists", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(restoreBase))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := ParseRestore(strings.NewReader(tc.have))
			if err != nil {
				t.Fatal(err)
			}
			err = RestoreTo(cfg, lines)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr && err.Error() != "line 1: "+tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				b, _ := json.Marshal(cfg)
				t.Errorf("configuration after: %s", b)
			}
		})
	}
}

func TestParseRestore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string
		want    int // commands
		wantErr string
	}{
		{"rules as -S prints them", "-A -t 10.0.0.1:80 -s rr\n-P -t 10.0.0.1:80 -z 10.0.0.254\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -b -w 1\n", 3, ""},
		{"comments, blank lines and the program name", "# saved\n\nipvsadm -A -t 10.0.0.1:80 -s rr\n/sbin/ipvsadm -D -t 10.0.0.1:80\n", 2, ""},
		{"nothing", "", 0, ""},
		{"a usage error names its line", "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1 -w 70000\n", 0, "line 2: -w 70000: weight must be 0 to 65535"},
		{"a listing is no change", "-L -n\n", 0, "line 1: -R restores changes; ipvsadm list is not one"},
		{"-R in -R", "-R\n", 0, "line 1: -R restores changes; ipvsadm restore is not one"},
		{"-Z is no configuration", "-Z\n", 0, "line 1: -R restores changes; ipvsadm zero is not one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRestore(strings.NewReader(tc.have))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !IsUsage(err) {
					t.Fatalf("error %v, want the usage error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.want {
				t.Fatalf("got %d commands, %v; want %d", len(got), err, tc.want)
			}
		})
	}
}

// TestSaveRestore checks that -R of -S's rules builds the same services.
func TestSaveRestore(t *testing.T) {
	var rules strings.Builder
	if err := WriteRules(&rules, fixture(), ListOptions{Numeric: true}); err != nil {
		t.Fatal(err)
	}
	lines, err := ParseRestore(strings.NewReader(rules.String()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	if err := RestoreTo(cfg, lines); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Services) != 3 {
		t.Fatalf("%d services, want 3", len(cfg.Services))
	}
	web := cfg.Services[0]
	if web.VIP != "10.0.0.1" || web.Port != 80 || web.Scheduler != "rr" || web.Persistent != 300 ||
		web.Netmask != "255.255.255.0" || strings.Join(web.LocalIPs, " ") != "10.0.0.254 10.0.0.253" ||
		len(web.Reals) != 2 || *web.Reals[1].Weight != 2 {
		t.Errorf("the TCP service came back as %+v", web)
	}
	if v6 := cfg.Services[2]; v6.Netmask != "64" || v6.Persistent != 600 || v6.Reals[0].Address != "2001:db8::2" {
		t.Errorf("the IPv6 service came back as %+v", v6)
	}
}
