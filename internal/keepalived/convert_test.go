// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
)

// summary renders a service on one line:
// "tcp 192.0.2.1:80 wlc laddr=L,L reals=A:P,A:Pw2 check=tcp/6s/3s/rise1/fall2 ..."
func summary(s config.Service) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:%d %s", s.Protocol, s.VIP, s.Port, s.Scheduler)
	if s.Name != "" {
		fmt.Fprintf(&b, " name=%s", s.Name)
	}
	if s.Persistent != 0 {
		fmt.Fprintf(&b, " p=%d", s.Persistent)
	}
	if s.Netmask != "" {
		fmt.Fprintf(&b, " mask=%s", s.Netmask)
	}
	fmt.Fprintf(&b, " laddr=%s reals=", strings.Join(s.LocalIPs, ","))
	for i, r := range s.Reals {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s:%d", r.Address, r.Port)
		if r.Weight != nil {
			fmt.Fprintf(&b, "w%d", *r.Weight)
		}
	}
	if h := s.HealthCheck; h != nil {
		fmt.Fprintf(&b, " check=%s/%s/%s/rise%d/fall%d", h.Type, h.Interval, h.Timeout, h.Rise, h.Fall)
		for _, f := range []struct{ k, v string }{
			{"port", fmt.Sprint(h.Port)}, {"path", h.Path}, {"host", h.Host}, {"status", fmt.Sprint(h.ExpectStatus)},
			{"body", h.ExpectBody}, {"send", h.Send}, {"expect", h.Expect}, {"cmd", h.Command},
			{"shell", map[bool]string{true: "yes"}[h.Shell]}, {"user", h.User}, {"group", h.Group},
		} {
			if f.v != "" && f.v != "0" {
				fmt.Fprintf(&b, " %s=%s", f.k, f.v)
			}
		}
	}
	return b.String()
}

// vs wraps statements in a virtual server with two reals.
func vs(head, body, real string) string {
	return "virtual_server " + head + " {\n" + body + "\nreal_server 10.0.0.1 80 {\n" + real +
		"\n}\nreal_server 10.0.0.2 80 {\n" + real + "\n}\n}\n"
}

func TestConvert(t *testing.T) {
	laddrs := Options{LocalIPs: []string{"198.51.100.9", "2001:db8:f::9"}}
	for _, tc := range []struct {
		name     string
		have     string
		opts     *Options // default: laddrs
		want     []string // service summaries
		unmapped []string // "LINE: TEXT: WHY"
	}{
		{name: "defaults: wlc, tcp noted, no check", have: "virtual_server 192.0.2.1 80 {\nreal_server 10.0.0.1 8080 {\n}\n}\n",
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:8080"},
			unmapped: []string{"1: virtual_server 192.0.2.1 80 {...}: no protocol: imported as tcp (keepalived 2.x takes udp, and warns)"}},
		{name: "IPv6 takes the IPv6 local IP", have: vs("2001:db8::1 443", "protocol TCP\nlb_algo rr", ""),
			want: []string{"tcp 2001:db8::1:443 rr laddr=2001:db8:f::9 reals=10.0.0.1:80,10.0.0.2:80"}},
		{name: "no local IP of the family", have: vs("2001:db8::1 443", "protocol UDP\nlb_algo mh", ""),
			opts:     &Options{LocalIPs: []string{"198.51.100.9"}},
			want:     []string{"udp 2001:db8::1:443 mh laddr= reals=10.0.0.1:80,10.0.0.2:80"},
			unmapped: []string{"1: virtual_server 2001:db8::1 443 {...}: no IPv6 local IP: FullNAT needs one: pass --laddr"}},
		{name: "real without a port takes the VIP's", have: "virtual_server 192.0.2.1 443 {\nprotocol TCP\nreal_server 10.0.0.1 {\n}\n}\n",
			want: []string{"tcp 192.0.2.1:443 wlc laddr=198.51.100.9 reals=10.0.0.1:443"}},
		{name: "port 0 without persistence becomes persistent, as in keepalived",
			have: "virtual_server 192.0.2.1 0 {\nprotocol TCP\nreal_server 10.0.0.1 0 {\n}\n}\n",
			want: []string{"tcp 192.0.2.1:0 wlc p=360 laddr=198.51.100.9 reals=10.0.0.1:0"}},
		{name: "lblc with equal weights falls back to rr", have: vs("192.0.2.1 80", "protocol TCP\nlb_algo lblc", "weight 2"),
			want:     []string{"tcp 192.0.2.1:80 rr laddr=198.51.100.9 reals=10.0.0.1:80w2,10.0.0.2:80w2"},
			unmapped: []string{"3: lb_algo lblc: xlb has no lblc scheduler: rr used instead, as the reals' weights are equal"}},
		{name: "FNAT is silent, TUN is noted", have: vs("192.0.2.1 80", "protocol TCP\nlb_kind FNAT", "lvs_method TUN type gue port 6080"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"},
			unmapped: []string{"5: lvs_method TUN type gue port 6080: " + whyFullNAT,
				"8: lvs_method TUN type gue port 6080: " + whyFullNAT}},
		{name: "persistence", have: vs("192.0.2.1 80", "protocol TCP\npersistence_timeout 50\npersistence_granularity 255.255.0.0", ""),
			want: []string{"tcp 192.0.2.1:80 wlc p=50 mask=255.255.0.0 laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"}},
		{name: "a bad netmask", have: vs("192.0.2.1 80", "protocol TCP\npersistence_granularity 255.0.255.0", ""),
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"},
			unmapped: []string{`3: persistence_granularity 255.0.255.0: "255.0.255.0" is not a netmask or prefix length`}},
		{name: "snmp_name names the service", have: vs("192.0.2.1 80", "protocol TCP\nsnmp_name web", ""),
			want: []string{"tcp 192.0.2.1:80 wlc name=web laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"}},
		{name: "keepalived's check defaults", have: vs("192.0.2.1 80", "protocol TCP", "TCP_CHECK {\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=tcp/1m0s/5s/rise1/fall2"}},
		{name: "MISC_CHECK defaults: no retry, timeout the interval", have: vs("192.0.2.1 80", "protocol TCP\ndelay_loop 7", `MISC_CHECK {
misc_path "/bin/true"
}`),
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/7s/7s/rise1/fall1 cmd=/bin/true"},
			unmapped: []string{"5: MISC_CHECK {...}: " + whyScriptUser, "10: MISC_CHECK {...}: " + whyScriptUser}},
		{name: "MISC_CHECK user and group", have: vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path \"/bin/chk -p 80\"\nuser nobody daemon\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk -p 80 user=nobody group=daemon"}},
		{name: "MISC_CHECK user and :group", have: vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path /bin/chk\nuser nobody :daemon\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk user=nobody group=daemon"}},
		{name: "MISC_CHECK user and :", have: vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path /bin/chk\nuser nobody :\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk user=nobody"}},
		{name: "MISC_CHECK user of three words", have: vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path /bin/chk\nuser a b c\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk"},
			unmapped: []string{"4: MISC_CHECK {...}: " + whyScriptUser, "6: user a b c: want user USERNAME [GROUPNAME]",
				"10: MISC_CHECK {...}: " + whyScriptUser, "12: user a b c: want user USERNAME [GROUPNAME]"}},
		{name: "MISC_CHECK with shell syntax", have: vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path \"/bin/chk a|b\"\nuser nobody\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk a|b shell=yes user=nobody"},
			unmapped: []string{`5: misc_path "/bin/chk a|b": keepalived runs it without a shell, xlb with /bin/sh (shell: true), which interprets the unquoted '|' at byte 10: check the command`,
				`11: misc_path "/bin/chk a|b": keepalived runs it without a shell, xlb with /bin/sh (shell: true), which interprets the unquoted '|' at byte 10: check the command`}},
		{name: "settings pass from virtual server to real to check", have: `virtual_server 192.0.2.1 80 {
protocol TCP
connect_timeout 4
real_server 10.0.0.1 80 {
retry 0
TCP_CHECK {
delay_loop 2.5
}
}
delay_loop 10
}
`, want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80 check=tcp/2.5s/2.5s/rise1/fall1"},
			unmapped: []string{"3: connect_timeout 4: xlb's check timeout is at most its interval: 2.5s imported",
				"10: delay_loop 10: no check of this virtual server that xlb imports uses it"}},
		{name: "a check of another real that differs", have: `virtual_server 192.0.2.1 80 {
protocol TCP
real_server 10.0.0.1 80 {
HTTP_GET {
url {
path /a
status_code 200
}
}
}
real_server 10.0.0.2 80 {
HTTP_GET {
url {
path /b
status_code 200
}
connect_timeout 3
}
}
real_server 10.0.0.3 80 {
}
}
`, want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 check=http/1m0s/5s/rise1/fall2 path=/a status=200"},
			unmapped: []string{"12: HTTP_GET {...}: " + whyDiffers + " in timeout, path",
				"20: real_server 10.0.0.3 80 {...}: this real has no check in keepalived; xlb checks it as it checks the service's other reals"}},
		{name: "a differing real's own settings", have: `virtual_server 192.0.2.1 80 {
protocol TCP
real_server 10.0.0.1 80 {
TCP_CHECK {
}
}
real_server 10.0.0.2 80 {
connect_timeout 3
TCP_CHECK {
connect_port 81
}
}
}
`, want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=tcp/1m0s/5s/rise1/fall2"},
			unmapped: []string{"8: connect_timeout 3: only this real's check uses it, and that check is not imported",
				"9: TCP_CHECK {...}: " + whyDiffers + " in timeout, port"}},
		{name: "a second checker of a real", have: vs("192.0.2.1 80", "protocol TCP", "TCP_CHECK {\n}\nPING_CHECK {\n}\nTCP_CHECK {\nconnect_port 81\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=tcp/1m0s/5s/rise1/fall2"},
			unmapped: []string{"6: PING_CHECK {...}: xlb has no ping check (its checks are tcp, http, https, udp and exec)",
				"8: TCP_CHECK {...}: xlb runs one check per real: only the first check is imported",
				"15: PING_CHECK {...}: xlb has no ping check (its checks are tcp, http, https, udp and exec)",
				"17: TCP_CHECK {...}: xlb runs one check per real: only the first check is imported"}},
		{name: "a command per real becomes one command", have: `virtual_server 2001:db8::1 53 {
protocol UDP
real_server 2001:db8::a 53 {
MISC_CHECK {
misc_path "/bin/chk [2001:db8::a]:53 2001:db8::ab '2001:db8::a'"
}
}
real_server 2001:db8::b 53 {
MISC_CHECK {
misc_path "/bin/chk [2001:db8::b]:53 2001:db8::ab '2001:db8::a'"
}
}
}
`, want: []string{"udp 2001:db8::1:53 wlc laddr=2001:db8:f::9 reals=2001:db8::a:53,2001:db8::b:53 check=exec/1m0s/1m0s/rise1/fall1 cmd=/bin/chk [${XLB_REAL_ADDR}]:${XLB_REAL_PORT} 2001:db8::ab '2001:db8::a' shell=yes"},
			unmapped: []string{"4: MISC_CHECK {...}: " + whyScriptUser,
				`5: misc_path "/bin/chk [2001:db8::a]:53 2001:db8::ab '2001:db8::a'": keepalived runs it without a shell, xlb with /bin/sh (shell: true), which interprets the unquoted '[' at byte 9: check the command`,
				"9: MISC_CHECK {...}: " + whyScriptUser,
				`10: misc_path "/bin/chk [2001:db8::b]:53 2001:db8::ab '2001:db8::a'": keepalived runs it without a shell, xlb with /bin/sh (shell: true), which interprets the unquoted '[' at byte 9: check the command`}},
		{name: "virtualhost of the url wins", have: vs("192.0.2.1 80", "protocol TCP\nvirtualhost a.example", "SSL_GET {\nurl {\npath /\nvirtualhost b.example\nstatus_code 200\n}\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=https/1m0s/5s/rise1/fall2 path=/ host=b.example status=200"}},
		{name: "virtualhost without an HTTP check", have: vs("192.0.2.1 80", "protocol TCP\nvirtualhost a.example", "TCP_CHECK {\nvirtualhost b.example\n}"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=tcp/1m0s/5s/rise1/fall2"},
			unmapped: []string{"3: virtualhost a.example: no check of this virtual server that xlb imports uses it",
				"6: virtualhost b.example: TCP_CHECK does not use it", "11: virtualhost b.example: TCP_CHECK does not use it"}},
		{name: "binary UDP payload", have: vs("192.0.2.1 80", "protocol UDP", "UDP_CHECK {\npayload ff00\nrequire_reply\n}"),
			want: []string{"udp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=udp/1m0s/5s/rise1/fall2"},
			unmapped: []string{"5: payload ff00: these bytes are not text (UTF-8): xlb's send and expect are strings",
				"11: payload ff00: these bytes are not text (UTF-8): xlb's send and expect are strings"}},
		{name: "lvs_timeouts", have: "global_defs {\nlvs_timeouts tcp 7200 udp 60\nlvs_flush\n}\n",
			unmapped: []string{"3: lvs_flush: xlb owns its own tables: there is no IPVS table to flush"}},
		{name: "group entries expand; fwmark entries are listed", have: `virtual_server_group g {
192.0.2.8/31 443
192.0.2.20
fwmark 3
}
virtual_server group g {
protocol TCP
persistence_timeout 60
real_server 10.0.0.1 {
}
}
`, want: []string{"tcp 192.0.2.8:443 wlc p=60 laddr=198.51.100.9 reals=10.0.0.1:0",
			"tcp 192.0.2.9:443 wlc p=60 laddr=198.51.100.9 reals=10.0.0.1:0",
			"tcp 192.0.2.20:0 wlc p=60 laddr=198.51.100.9 reals=10.0.0.1:0"},
			unmapped: []string{"4: fwmark 3: " + whyNoFwmark}},
		{name: "unknown group", have: "virtual_server group nope {\n}\n",
			unmapped: []string{"1: virtual_server group nope {...}: no virtual_server_group of that name"}},
		{name: "a group too big", have: "virtual_server_group g {\n10.0.0.0/16 80\n}\nvirtual_server group g {\n}\n",
			unmapped: []string{"2: 10.0.0.0/16 80: 10.0.0.0/16 has more than 256 addresses",
				"4: virtual_server group g {...}: virtual_server_group g has no address that xlb can serve"}},
		{name: "a DPVS local address group", have: "local_address_group l {\n10.0.0.250-251 dpdk0\n2001:db8::fe dpdk0\n}\n" +
			vs("192.0.2.1 80", "protocol TCP\nladdr_group_name l", ""),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=10.0.0.250,10.0.0.251 reals=10.0.0.1:80,10.0.0.2:80"}},
		{name: "a missing local address group", have: vs("192.0.2.1 80", "protocol TCP\nladdr_group_name nope", ""),
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"},
			unmapped: []string{"3: laddr_group_name nope: no local_address_group named nope: the local IPs come from --laddr"}},
		{name: "a virtual server without a block", have: "virtual_server 192.0.2.1 80\n",
			unmapped: []string{"1: virtual_server 192.0.2.1 80: a virtual_server needs a { } block with its reals"}},
		{name: "an unknown statement in a check", have: vs("192.0.2.1 80", "protocol TCP", "TCP_CHECK {\ncolour red\n}"),
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80 check=tcp/1m0s/5s/rise1/fall2"},
			unmapped: []string{"5: colour red: not a check setting xlb knows", "10: colour red: not a check setting xlb knows"}},
		{name: "a block after a statement that takes none", have: "virtual_server 192.0.2.1 80 {\nprotocol TCP\nreal_server 10.0.0.1 80 {\nweight 2 {\ncolour red\n}\n}\n}\n",
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80w2"},
			unmapped: []string{"4: weight 2 {...}: weight takes no { } block: the block is not imported"}},
		{name: "a block after a noted statement", have: "virtual_server 192.0.2.1 80 {\nprotocol TCP\nlb_kind NAT {\ncolour red\n}\n}\n",
			want:     []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals="},
			unmapped: []string{"3: lb_kind NAT {...}: " + whyFullNAT, "3: lb_kind NAT {...}: lb_kind takes no { } block: the block is not imported"}},
		{name: "alpha off is no note", have: vs("192.0.2.1 80", "protocol TCP", "alpha off\ninhibit_on_failure true"),
			want: []string{"tcp 192.0.2.1:80 wlc laddr=198.51.100.9 reals=10.0.0.1:80,10.0.0.2:80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := Parse("t.conf", []byte(tc.have))
			if err != nil {
				t.Fatal(err)
			}
			opts := laddrs
			if tc.opts != nil {
				opts = *tc.opts
			}
			cfg, unmapped, err := Convert(nodes, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range cfg.Services {
				got = append(got, summary(s))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("services:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if gotU, wantU := formatUnmapped(unmapped, "t.conf"), strings.Join(append(tc.unmapped, ""), "\n"); gotU != wantU && !(gotU == "" && len(tc.unmapped) == 0) {
				t.Errorf("unmapped:\n%s\nwant:\n%s", gotU, wantU)
			}
		})
	}
}

func TestConvertTimeouts(t *testing.T) {
	nodes, err := Parse("t.conf", []byte("global_defs {\n lvs_timeouts tcp 7200 tcpfin 30 udp 60\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Convert(nodes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tm := cfg.Timeouts; tm == nil || tm.TCP != 7200 || tm.TCPFin != 30 || tm.UDP != 60 {
		t.Errorf("timeouts %+v, want tcp 7200, tcp_fin 30, udp 60", tm)
	}
}

// TestConvertScriptUser checks that global_defs' script_user becomes
// exec_checks' user and group, that enable_script_security is noted,
// and that checks then need no note of their user.
func TestConvertScriptUser(t *testing.T) {
	nodes, err := Parse("t.conf", []byte("global_defs {\nenable_script_security\nscript_user checker :probes\n}\n"+
		vs("192.0.2.1 80", "protocol TCP", "MISC_CHECK {\nmisc_path /bin/chk\n}")))
	if err != nil {
		t.Fatal(err)
	}
	cfg, unmapped, err := Convert(nodes, Options{LocalIPs: []string{"198.51.100.9"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.ExecChecks; e == nil || e.User != "checker" || e.Group != "probes" {
		t.Errorf("exec_checks %+v, want user checker, group probes", e)
	}
	want := "2: enable_script_security: xlb does not check who can write a check's program: it runs checks as exec_checks.user " +
		"(nobody unless set), as root only where a check says user: root\n"
	if got := formatUnmapped(unmapped, "t.conf"); got != want {
		t.Errorf("unmapped:\n%s\nwant:\n%s", got, want)
	}
}

func TestConvertOptions(t *testing.T) {
	nodes, err := Parse("t.conf", []byte(vs("192.0.2.1 80", "protocol TCP", "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Convert(nodes, Options{LocalIPs: []string{"10.0.0.300"}}); err == nil || !strings.Contains(err.Error(), "10.0.0.300") {
		t.Errorf("error %v, want one naming 10.0.0.300", err)
	}
	if _, _, err := Convert(nodes, Options{LocalIPs: []string{"10.0.0.100-99"}}); err == nil || !strings.Contains(err.Error(), "ends below its first address") {
		t.Errorf("error %v, want one saying the range ends below its first address", err)
	}
	// a range, as DPVS's laddr_group writes them, stays one entry
	ranged, _, err := Convert(nodes, Options{LocalIPs: []string{"198.51.100.100-149", "2001:db8::100-1ff"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ranged.Services[0].LocalIPs; !slices.Equal(got, []string{"198.51.100.100-149"}) {
		t.Errorf("local_ips %q, want [198.51.100.100-149]", got)
	}
	cfg, _, err := Convert(nodes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Interfaces == nil {
		t.Error("interfaces is nil; want an empty list, written as []")
	}
}

// TestSweep checks the safety net behind the promise that nothing is
// dropped: a statement that the conversion neither mapped nor listed is
// listed by the sweep, and a block listed whole is not looked into.
func TestSweep(t *testing.T) {
	nodes, err := Parse("t.conf", []byte("real_server {\n  b 1\n  c {\n    d 1\n  }\n}\ne {\n  f 1\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &converter{handled: map[*Node]bool{}, listed: map[*Node]bool{}, noted: map[noteKey]bool{}}
	c.mapped(nodes[0])          // real_server: mapped, its block looked into
	c.mapped(nodes[0].Block[0]) // b: mapped
	c.skip(nodes[1], "listed")  // e: listed whole
	c.sweep(nodes)
	got := formatUnmapped(c.out, "t.conf")
	want := "7: e {...}: listed\n3: c {...}: not imported: xlb import does not know this statement here\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
