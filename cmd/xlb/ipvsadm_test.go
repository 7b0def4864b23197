// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// ipvsadmConns are the two entries of one FullNAT connection: the
// forward one (client -> VIP, its peer the local address) and the
// reverse one (real -> local address, its peer the client).
func ipvsadmConns() []loadbalancer.ConnEntry {
	ap := netip.MustParseAddrPort
	return []loadbalancer.ConnEntry{
		{Proto: loadbalancer.TCP, From: ap("203.0.113.7:5000"), To: ap("192.0.2.10:80"), Peer: ap("198.51.100.254:20001"),
			State: loadbalancer.StateEstablished, Idle: 10 * time.Second},
		{Proto: loadbalancer.TCP, From: ap("198.51.100.1:8080"), To: ap("198.51.100.254:20001"), Peer: ap("203.0.113.7:5000"),
			Reverse: true, State: loadbalancer.StateEstablished, Idle: 10 * time.Second},
	}
}

// runIpvsadmTest runs one ipvsadm command line against b's socket.
func runIpvsadmTest(sock, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := ipvsadmEnv{prog: "ipvsadm", socket: sock, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		rateInterval: 10 * time.Millisecond}
	code = runIpvsadm(context.Background(), env, args)
	return code, out.String(), errb.String()
}

const wantIpvsadmList = "Prot LocalAddress:Port Scheduler Flags\n" +
	"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
	"TCP  192.0.2.10:80 wrr\n" +
	"  -> 198.51.100.1:8080            FullNat 2      1          0         \n" +
	"  -> 198.51.100.2:8080            FullNat 1      1          0         \n"

// TestIpvsadm runs ipvsadm command lines against the API over an
// in-memory backend: what they print, their exit status, and what they
// changed. A refused command changes nothing.
func TestIpvsadm(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have       string // the arguments, split on spaces
		stdin      string
		wantCode   int
		wantOut    string // the whole standard output, when not empty
		wantErr    string // a substring of the standard error
		check      func(b *apitest.Backend) bool
		wantChange bool // the configuration changed
	}{
		{name: "-L -n", have: "-L -n", wantOut: "xlb version test (FullNAT)\n" + wantIpvsadmList},
		{name: "no arguments", have: "", wantOut: "xlb version test (FullNAT)\n" + wantIpvsadmList},
		{name: "one service", have: "-Ln -t 192.0.2.10:80", wantOut: wantIpvsadmList},
		{name: "no such service", have: "-Ln -t 192.0.2.10:81", wantCode: 1, wantErr: "ipvsadm: no such service: TCP 192.0.2.10:81\n"},
		{name: "--stats", have: "-L -n --stats -t 192.0.2.10:80", wantOut: "" +
			"Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n" +
			"  -> RemoteAddress:Port\n" +
			"TCP  192.0.2.10:80                       0        0        0        0        0\n" +
			"  -> 198.51.100.1:8080                   0        0        0        0        0\n" +
			"  -> 198.51.100.2:8080                   0        0        0        0        0\n"},
		{name: "--rate", have: "-L -n --rate -t 192.0.2.10:80", wantOut: "" +
			"Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS\n" +
			"  -> RemoteAddress:Port\n" +
			"TCP  192.0.2.10:80                       0        0        0        0        0\n" +
			"  -> 198.51.100.1:8080                   0        0        0        0        0\n" +
			"  -> 198.51.100.2:8080                   0        0        0        0        0\n"},
		{name: "--timeout", have: "-L --timeout", wantOut: "Timeout (tcp tcpfin udp): 900 7 300\n"},
		{name: "--daemon", have: "-L --daemon"},
		{name: "-c", have: "-Lnc", wantOut: "IPVS connection entries\n" +
			"pro expire state       source             virtual            destination\n" +
			"TCP 14:50  ESTABLISHED 203.0.113.7:5000   192.0.2.10:80      198.51.100.1:8080\n"},
		{name: "-S", have: "-S -n", wantOut: "-A -t 192.0.2.10:80 -s wrr\n" +
			"-P -t 192.0.2.10:80 -z 198.51.100.254\n" +
			"-a -t 192.0.2.10:80 -r 198.51.100.1:8080 -b -w 2\n" +
			"-a -t 192.0.2.10:80 -r 198.51.100.2:8080 -b -w 1\n"},
		{name: "-G", have: "-G -t 192.0.2.10:80", wantOut: "" +
			"VIP:VPORT            TOTAL    SNAT_IP              CONFLICTS  CONNS     \n" +
			"192.0.2.10:80        1        \n" +
			"                              198.51.100.254       0          0         \n"},

		{name: "add service", have: "-A -t 192.0.2.11:443 -s rr -p 60 -M 255.255.255.0 -z 198.51.100.254", wantChange: true,
			check: func(b *apitest.Backend) bool {
				s := b.Config().Services[1]
				return s.VIP == "192.0.2.11" && s.Port == 443 && s.Scheduler == "rr" && s.Persistent == 60 &&
					s.Netmask == "255.255.255.0" && len(s.LocalIPs) == 1
			}},
		{name: "add IPv6 service", have: "-A -u [2001:db8::10]:53 -s sh -z 2001:db8::fe", wantChange: true,
			check: func(b *apitest.Backend) bool { return b.Config().Services[1].Protocol == "udp" }},
		{name: "add service without local address", have: "-A -t 192.0.2.11:80 -s mh", wantChange: true,
			check: func(b *apitest.Backend) bool { return len(b.Config().Services) == 2 }},
		{name: "add service twice", have: "-A -t 192.0.2.10:80 -s rr", wantCode: 1, wantErr: "exists"},
		{name: "daemon refuses a netmask without persistence", have: "-A -t 192.0.2.11:80 -s rr -M 255.255.255.0",
			wantCode: 1, wantErr: "netmask"},
		{name: "edit service", have: "-E -t 192.0.2.10:80 -s rr -p", wantChange: true,
			check: func(b *apitest.Backend) bool {
				s := b.Config().Services[0]
				return s.Scheduler == "rr" && s.Persistent == 300 && len(s.Reals) == 2 && len(s.LocalIPs) == 1
			}},
		{name: "delete service", have: "-D -t 192.0.2.10:80", wantChange: true,
			check: func(b *apitest.Backend) bool { return len(b.Config().Services) == 0 }},
		{name: "delete missing service", have: "-D -t 192.0.2.10:81", wantCode: 1, wantErr: "no service"},
		{name: "add real with the service's port", have: "-a -t 192.0.2.10:80 -r 198.51.100.3 -b", wantChange: true,
			check: func(b *apitest.Backend) bool {
				r := b.Config().Services[0].Reals[2]
				return r.Address == "198.51.100.3" && r.Port == 80 && *r.Weight == 1
			}},
		{name: "drain real", have: "-e -t 192.0.2.10:80 -r 198.51.100.1:8080 -w 0", wantChange: true,
			check: func(b *apitest.Backend) bool { return *b.Config().Services[0].Reals[0].Weight == 0 }},
		{name: "delete real", have: "-d -t 192.0.2.10:80 -r 198.51.100.2:8080", wantChange: true,
			check: func(b *apitest.Backend) bool { return len(b.Config().Services[0].Reals) == 1 }},
		{name: "delete missing real", have: "-d -t 192.0.2.10:80 -r 198.51.100.2", wantCode: 1, wantErr: "no real"},
		{name: "add local address", have: "-P -t 192.0.2.10:80 -z 198.51.100.253 -F eth0", wantChange: true,
			check: func(b *apitest.Backend) bool { return len(b.Config().Services[0].LocalIPs) == 2 }},
		{name: "delete local address", have: "-Q -t 192.0.2.10:80 -z 198.51.100.254", wantChange: true,
			check: func(b *apitest.Backend) bool { return len(b.Config().Services[0].LocalIPs) == 0 }},
		{name: "clear", have: "-C", wantChange: true,
			check: func(b *apitest.Backend) bool { c := b.Config(); return len(c.Services) == 0 && b.Applies() == 1 }},
		{name: "set timeouts", have: "--set 600 0 30", wantChange: true,
			check: func(b *apitest.Backend) bool {
				t := b.Config().Timeouts
				return t != nil && t.TCP == 600 && t.TCPFin == 0 && t.UDP == 30 && len(b.Config().Services) == 1
			}},
		{name: "zero all", have: "-Z", check: func(b *apitest.Backend) bool { return strings.Join(b.Zeroed, ",") == "all" }},
		{name: "zero one", have: "-Z -t 192.0.2.10:80",
			check: func(b *apitest.Backend) bool { return strings.Join(b.Zeroed, ",") == "tcp 192.0.2.10:80" }},
		{name: "restore", have: "-R", wantChange: true, stdin: "-C\n" +
			"-A -t 192.0.2.20:80 -s rr -p 120\n-P -t 192.0.2.20:80 -z 198.51.100.254\n" +
			"-a -t 192.0.2.20:80 -r 198.51.100.9:8080 -b -w 3\n--set 0 0 60\n",
			check: func(b *apitest.Backend) bool {
				c := b.Config()
				return b.Applies() == 1 && len(c.Services) == 1 && c.Services[0].VIP == "192.0.2.20" &&
					c.Services[0].Persistent == 120 && *c.Services[0].Reals[0].Weight == 3 && c.Timeouts.UDP == 60
			}},
		{name: "restore refused whole", have: "-R", stdin: "-A -t 192.0.2.20:80 -s rr\n-A -t 192.0.2.10:80 -s rr\n",
			wantCode: 1, wantErr: "ipvsadm: line 2: service TCP 192.0.2.10:80 exists\n"},
		{name: "restore with a usage error", have: "-R", stdin: "-A -t 192.0.2.20:80 -s rr\n-a -t 192.0.2.20:80 -r 198.51.100.9 -g\n",
			wantCode: 2, wantErr: "ipvsadm: line 2: -g (gatewaying): xlb forwards in FullNAT only: use -b (or leave the method out)\n"},

		{name: "weight too big", have: "-a -t 192.0.2.10:80 -r 198.51.100.3 -w 70000", wantCode: 2,
			wantErr: "ipvsadm: -w 70000: weight must be 0 to 65535\n"},
		{name: "masquerading", have: "-a -t 192.0.2.10:80 -r 198.51.100.3 -m", wantCode: 2,
			wantErr: "ipvsadm: -m (masquerading): xlb forwards in FullNAT only: use -b (or leave the method out)\n"},
		{name: "unknown scheduler", have: "-A -t 192.0.2.11:80 -s dh", wantCode: 2, wantErr: "xlb has no dh scheduler"},
		{name: "bad option", have: "-L --bogus", wantCode: 2, wantErr: "ipvsadm: --bogus: unknown option (see ipvsadm -h)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, sock := apitest.Serve(t, testConfig)
			b.ConnEntries = ipvsadmConns()
			before, _ := json.Marshal(b.Config())
			code, out, errOut := runIpvsadmTest(sock, tc.stdin, strings.Fields(tc.have)...)
			if code != tc.wantCode {
				t.Fatalf("exit status %d, want %d; stderr %q", code, tc.wantCode, errOut)
			}
			if tc.wantOut != "" && out != tc.wantOut {
				t.Errorf("stdout\n%s\nwant\n%s", strings.ReplaceAll(out, " \n", "·\n"), strings.ReplaceAll(tc.wantOut, " \n", "·\n"))
			}
			if tc.wantOut == "" && tc.check == nil && out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if !strings.Contains(errOut, tc.wantErr) || (tc.wantErr == "" && errOut != "") {
				t.Errorf("stderr %q, want %q", errOut, tc.wantErr)
			}
			after, _ := json.Marshal(b.Config())
			if changed := string(before) != string(after); changed != tc.wantChange {
				t.Errorf("configuration changed: %v, want %v: %s", changed, tc.wantChange, after)
			}
			if tc.check != nil && !tc.check(b) {
				t.Errorf("backend after the command: %s, zeroed %q", after, b.Zeroed)
			}
		})
	}
}

// TestIpvsadmListAfterAdd lists a persistent service added by ipvsadm.
func TestIpvsadmListAfterAdd(t *testing.T) {
	_, sock := apitest.Serve(t, testConfig)
	if code, _, errOut := runIpvsadmTest(sock, "", "-A", "-t", "[2001:db8::10]:443", "-s", "rr", "-p", "600", "-M", "64"); code != 0 {
		t.Fatalf("-A: %d %s", code, errOut)
	}
	if code, _, errOut := runIpvsadmTest(sock, "", "-a", "-t", "[2001:db8::10]:443", "-r", "2001:db8::2", "-w", "3"); code != 0 {
		t.Fatalf("-a: %d %s", code, errOut)
	}
	_, out, _ := runIpvsadmTest(sock, "", "-L", "-n", "-t", "[2001:db8::10]:443")
	want := "Prot LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
		"TCP  [2001:db8::10]:443 rr persistent 600 mask 64\n" +
		"  -> [2001:db8::2]:443            FullNat 3      1          0         \n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestIpvsadmNoDaemon(t *testing.T) {
	code, _, errOut := runIpvsadmTest(t.TempDir()+"/none.sock", "", "-L", "-n")
	if code != 1 || !strings.HasPrefix(errOut, "ipvsadm: ") || !strings.Contains(errOut, "none.sock") {
		t.Fatalf("exit %d, stderr %q; want 1 and a message naming the socket", code, errOut)
	}
}

// TestIpvsadmEntryPoints runs the cobra command and ipvsadmMain, which
// find the daemon through $XLB_SOCKET.
func TestIpvsadmEntryPoints(t *testing.T) {
	_, sock := apitest.Serve(t, testConfig)
	t.Setenv("XLB_SOCKET", sock)

	var out, errb bytes.Buffer
	if code := ipvsadmMain([]string{"-S", "-n"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "-A -t 192.0.2.10:80 -s wrr\n") {
		t.Errorf("ipvsadmMain -S -n: %d, %q, %q", code, out.String(), errb.String())
	}

	for _, tc := range []struct {
		args     []string
		wantOut  string
		wantCode int
	}{
		{[]string{"-L", "-n"}, "xlb version test (FullNAT)\n" + wantIpvsadmList, 0},
		{[]string{"-h"}, "Usage:", 0},
		{[]string{"--help"}, "--add-service", 0},
		{[]string{"-A", "-t", "192.0.2.11:80", "-s", "rr", "-w", "2"}, "", 2},
		{[]string{"-D", "-t", "192.0.2.11:80"}, "", 1},
	} {
		cmd := newIpvsadmCmd(&globalFlags{})
		var out, errb bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		var status exitStatus
		code := 0
		if errors.As(err, &status) {
			code = int(status)
		} else if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) {
			t.Errorf("xlb ipvsadm %q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantOut)
		}
	}
}

// TestIpvsadmSaveRestore restores -S's rules into an empty daemon.
func TestIpvsadmSaveRestore(t *testing.T) {
	_, sock := apitest.Serve(t, testConfig)
	code, saved, errOut := runIpvsadmTest(sock, "", "-S", "-n")
	if code != 0 {
		t.Fatalf("-S: %d %s", code, errOut)
	}
	b2, sock2 := apitest.Serve(t, "interfaces: [eth0]\nservices: []\n")
	if code, _, errOut := runIpvsadmTest(sock2, saved, "-R"); code != 0 {
		t.Fatalf("-R: %d %s", code, errOut)
	}
	_, again, _ := runIpvsadmTest(sock2, "", "-S", "-n")
	if again != saved {
		t.Errorf("after -R, -S prints\n%s\nwant\n%s", again, saved)
	}
	if c := b2.Config(); len(c.Services) != 1 || c.Services[0].Scheduler != "wrr" || len(c.Services[0].LocalIPs) != 1 {
		b, _ := json.Marshal(c)
		t.Errorf("restored configuration %s", b)
	}
}

// TestIpvsadmApplyKeepsTheRest checks that --set, which applies the
// whole configuration, keeps what ipvsadm does not know of: names,
// health checks, persistence, the port range, the XDP mode.
func TestIpvsadmApplyKeepsTheRest(t *testing.T) {
	const rich = `interfaces: [eth0, eth1]
xdp_mode: generic
local_port_range: 20000-29999
timeouts: {tcp_fin: 60}
services:
  - name: web
    vip: 192.0.2.10
    port: 80
    protocol: tcp
    scheduler: wrr
    persistent: 600
    netmask: 255.255.255.0
    health_check: {type: http, interval: 3s, path: /health, expect_status: 204}
    local_ips: [198.51.100.254]
    reals:
      - {address: 198.51.100.1, port: 8080, weight: 0}
`
	b, sock := apitest.Serve(t, rich)
	before := b.Config()
	if code, _, errOut := runIpvsadmTest(sock, "", "--set", "600", "0", "0"); code != 0 {
		t.Fatalf("--set: %d %s", code, errOut)
	}
	after := b.Config()
	if after.Timeouts == nil || after.Timeouts.TCP != 600 || after.Timeouts.TCPFin != 60 {
		t.Errorf("timeouts %+v, want tcp 600 and tcp_fin 60 kept", after.Timeouts)
	}
	after.Timeouts = before.Timeouts
	x, _ := json.Marshal(before)
	y, _ := json.Marshal(after)
	if string(x) != string(y) {
		t.Errorf("--set changed more than the timeouts:\n%s\n%s", x, y)
	}
}
