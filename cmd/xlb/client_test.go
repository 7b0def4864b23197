// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

const testConfig = `interfaces: [eth0]
services:
  - vip: 192.0.2.10
    port: 80
    protocol: tcp
    scheduler: wrr
    local_ips: [198.51.100.254]
    reals:
      - {address: 198.51.100.1, port: 8080, weight: 2}
      - {address: 198.51.100.2, port: 8080}
`

// TestClientCommands runs each command against the API over an
// in-memory backend: what it prints, whether a refusal is a usage error
// (exit code 2), and what it changed.
func TestClientCommands(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		wantOut   []string // substrings of the output, in order
		wantUsage bool
		check     func(b *apitest.Backend) bool
	}{
		{name: "list", args: []string{"list", "-n"}, wantOut: []string{
			"Prot LocalAddress:Port Scheduler Flags",
			"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn",
			"TCP  192.0.2.10:80 wrr",
			"  -> 198.51.100.1:8080            FullNat 2      1          0",
			"  -> 198.51.100.2:8080            FullNat 1      1          0"}},
		{name: "list stats", args: []string{"list", "-n", "--stats"}, wantOut: []string{"Conns   InPkts  OutPkts  InBytes OutBytes", "TCP  192.0.2.10:80"}},
		{name: "list json", args: []string{"--json", "list", "-n"}, wantOut: []string{`"vip": "192.0.2.10"`, `"active_conns": 1`}},
		{name: "stats", args: []string{"stats"}, wantOut: []string{"ip_truncated", "2",
			"conn table", "size  memory   entries  live  max   occupancy  inserts  removals  refused  half_open_drops  reply_misses  forward_misses",
			"ipv4", "512   0.1 MiB  300      256   1024  25.0%      400      100       0        4                3             1",
			"local IP", "no_lport", "198.51.100.254", "7"}},
		{name: "status", args: []string{"status"}, wantOut: []string{"Daemon:", "running, xlb ", "up 1h0m0s (since ",
			"Config:", "/etc/xlb/xlb.yaml, revision 1", "Pins:", "/sys/fs/bpf/xlb", "Interfaces:", "eth0 (native); single-buffer XDP",
			"Services:", "1 (1 tcp, 0 udp)", "Reals:", "2: 2 up, 0 down, 0 unresolved, 0 drained",
			"Conn tables:", "ipv4 256 of 1024 entries (25.0%)", "Warnings:", "none"}},
		{name: "status json", args: []string{"--json", "status"}, wantOut: []string{`"uptime": "1h0m0s"`, `"up": 2`, `"warnings": []`}},
		{name: "top", args: []string{"top", "--count", "1", "--interval", "100ms"}, wantOut: []string{"xlb top, ", "Prot LocalAddress:Port", "CPS",
			"TCP  192.0.2.10:80", "  -> 198.51.100.1:8080", "drops/s: none", "conn tables: ipv4 25.0%"}},
		{name: "top bad interval", args: []string{"top", "--interval", "1ms"}, wantUsage: true, wantOut: []string{"--interval 1ms: want 100ms to 1h"}},
		{name: "stats watch", args: []string{"stats", "--watch", "--count", "1", "--interval", "100ms"}, wantOut: []string{"xlb stats, ",
			"verdict", "total", "per second", "drop reason", "ip_truncated"}},
		{name: "drops follow", args: []string{"drops", "--follow", "--count", "2"}, wantOut: []string{
			"14:04:05.123456 cpu1 eth0 tcp_not_syn tcp 203.0.113.7:5000 -> 192.0.2.10:80 len 66",
			"14:04:06.000000 cpu0 eth0 eth_truncated (no IP header in the sample) len 10"}},
		{name: "drops follow one reason", args: []string{"drops", "-f", "--reason", "ip_truncated", "--count", "1"}, wantOut: []string{"ip_truncated udp"}},
		{name: "drops follow a wrong reason", args: []string{"drops", "-f", "--reason", "nonsense"}, wantUsage: true,
			wantOut: []string{`reason "nonsense" is not a drop reason`}},
		{name: "drops counters", args: []string{"drops"}, wantOut: []string{"ip_truncated", "2"}},
		{name: "drops count without follow", args: []string{"drops", "--count", "3"}, wantUsage: true},
		{name: "weight not a number", args: []string{"real", "add", "-t", "192.0.2.10:80", "-r", "198.51.100.3:80", "-w", "abc"}, wantUsage: true,
			wantOut: []string{`-w, --weight: "abc" is not a whole number`}},
		{name: "port out of range", args: []string{"service", "add", "-t", "192.0.2.10:99999"}, wantUsage: true,
			wantOut: []string{`service "192.0.2.10:99999": port 99999 is out of range (0 to 65535)`}},
		{name: "real port not a number", args: []string{"real", "add", "-t", "192.0.2.10:80", "-r", "198.51.100.3:http"}, wantUsage: true,
			wantOut: []string{`real "198.51.100.3:http": port "http" is not a number`}},
		{name: "not an address", args: []string{"service", "del", "-t", "192.0.2.300:80"}, wantUsage: true,
			wantOut: []string{`"192.0.2.300" is not an IP address`}},
		{name: "config export", args: []string{"config", "export"}, wantOut: []string{"# xlb config export: the configuration in force, revision 1",
			"interfaces:", "- eth0", "services:", "vip: 192.0.2.10", "address: 198.51.100.1"}},
		{name: "conn list", args: []string{"conn", "list"}, wantOut: []string{"source", "destination/peer", "tcp idle 1s SYN_SENT 203.0.113.7:5000 192.0.2.10:80 198.51.100.1:8080 in"}},
		{name: "add service", args: []string{"service", "add", "-u", "192.0.2.10:53", "-s", "sh", "-z", "198.51.100.254"},
			check: func(b *apitest.Backend) bool {
				c := b.Config()
				return len(c.Services) == 2 && c.Services[1].Scheduler == "sh"
			}},
		{name: "add service without laddr (added later, as DPVS)", args: []string{"service", "add", "-t", "192.0.2.11:80"}, wantOut: []string{"add service tcp 192.0.2.11:80 (rr, no local IP: it forwards nothing until one is added)"}},
		{name: "add service twice", args: []string{"service", "add", "-t", "192.0.2.10:80", "-z", "198.51.100.254"}, wantUsage: true, wantOut: []string{"exists"}},
		{name: "service -t and -u", args: []string{"service", "del", "-t", "192.0.2.10:80", "-u", "192.0.2.10:80"}, wantUsage: true},
		{name: "service bad address", args: []string{"service", "del", "-t", "192.0.2.300:80"}, wantUsage: true, wantOut: []string{"192.0.2.300:80"}},
		{name: "edit scheduler", args: []string{"service", "edit", "-t", "192.0.2.10:80", "-s", "mh"},
			check: func(b *apitest.Backend) bool {
				c := b.Config()
				return c.Services[0].Scheduler == "mh" && len(c.Services[0].Reals) == 2
			}},
		{name: "add service on a host address", args: []string{"service", "add", "-t", "192.0.2.12:0", "--host-address"},
			check: func(b *apitest.Backend) bool {
				c := b.Config()
				return len(c.Services) == 2 && c.Services[1].HostAddress
			}},
		{name: "edit host address", args: []string{"service", "edit", "-t", "192.0.2.10:80", "--host-address"},
			check: func(b *apitest.Backend) bool { return b.Config().Services[0].HostAddress }},
		{name: "edit nothing", args: []string{"service", "edit", "-t", "192.0.2.10:80"}, wantUsage: true, wantOut: []string{"nothing to edit"}},
		{name: "add real", args: []string{"real", "add", "-t", "192.0.2.10:80", "-r", "198.51.100.3:8080", "-w", "5"},
			check: func(b *apitest.Backend) bool {
				r := b.Config().Services[0].Reals
				return len(r) == 3 && *r[2].Weight == 5
			}},
		{name: "drain real", args: []string{"real", "edit", "-t", "192.0.2.10:80", "-r", "198.51.100.1:8080", "-w", "0"},
			check: func(b *apitest.Backend) bool { return *b.Config().Services[0].Reals[0].Weight == 0 }},
		{name: "real weight too big", args: []string{"real", "edit", "-t", "192.0.2.10:80", "-r", "198.51.100.1:8080", "-w", "70000"}, wantUsage: true, wantOut: []string{"weight"}},
		{name: "real not there", args: []string{"real", "del", "-t", "192.0.2.10:80", "-r", "198.51.100.9:8080"}, wantUsage: true, wantOut: []string{"no real"}},
		{name: "real of the other family", args: []string{"real", "add", "-t", "192.0.2.10:80", "-r", "[2001:db8::1]:80"}, wantUsage: true, wantOut: []string{"reals[2].address"}},
		{name: "bad real", args: []string{"real", "add", "-t", "192.0.2.10:80", "-r", "nowhere"}, wantUsage: true, wantOut: []string{`real "nowhere"`}},
		{name: "del real", args: []string{"real", "del", "-t", "192.0.2.10:80", "-r", "198.51.100.2:8080"},
			check: func(b *apitest.Backend) bool { return len(b.Config().Services[0].Reals) == 1 }},
		{name: "add laddr", args: []string{"laddr", "add", "-t", "192.0.2.10:80", "-z", "198.51.100.253"},
			check: func(b *apitest.Backend) bool { return len(b.Config().Services[0].LocalIPs) == 2 }},
		{name: "del last laddr", args: []string{"laddr", "del", "-t", "192.0.2.10:80", "-z", "198.51.100.254"}, wantOut: []string{"no local IP: it forwards nothing"}},
		{name: "apply missing file", args: []string{"apply", "-f", "/nonexistent/xlb.yaml"}, wantUsage: true, wantOut: []string{"/nonexistent/xlb.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, sock := apitest.Serve(t, testConfig)
			b.ConnEntries = []loadbalancer.ConnEntry{{Proto: loadbalancer.TCP, From: netip.MustParseAddrPort("203.0.113.7:5000"),
				To: netip.MustParseAddrPort("192.0.2.10:80"), Peer: netip.MustParseAddrPort("198.51.100.1:8080"), Idle: time.Second}}
			b.Drops = []api.Drop{
				{Time: time.Date(2026, 11, 29, 14, 4, 5, 123456000, time.Local), CPU: 1, Interface: "eth0", Reason: "tcp_not_syn", Len: 66,
					Proto: "tcp", Src: netip.MustParseAddrPort("203.0.113.7:5000"), Dst: netip.MustParseAddrPort("192.0.2.10:80")},
				{Time: time.Date(2026, 11, 29, 14, 4, 6, 0, time.Local), Interface: "eth0", Reason: "eth_truncated", Len: 10},
				{Time: time.Date(2026, 11, 29, 14, 4, 7, 0, time.Local), Interface: "eth0", Reason: "ip_truncated", Len: 74, Proto: "udp"},
			}
			before := b.Config()
			out, err := run(append(tc.args, "--socket", sock)...)
			var ue usageError
			if errors.As(err, &ue) != tc.wantUsage || (err != nil && !tc.wantUsage) {
				t.Fatalf("error %v; want a usage error: %v", err, tc.wantUsage)
			}
			if err != nil {
				out += err.Error()
			}
			rest := out
			for _, w := range tc.wantOut {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			if tc.check != nil && !tc.check(b) {
				cfg, _ := json.Marshal(b.Config())
				t.Fatalf("configuration after the command: %s", cfg)
			}
			if tc.wantUsage {
				a, _ := json.Marshal(before)
				z, _ := json.Marshal(b.Config())
				if string(a) != string(z) || b.Applies() != 0 {
					t.Fatal("a refused command changed the configuration")
				}
			}
		})
	}
}

// TestNoDaemon checks that a command without a daemon says where it
// looked, and is not a usage error.
func TestNoDaemon(t *testing.T) {
	_, err := run("list", "-n", "--socket", t.TempDir()+"/none.sock")
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "none.sock") {
		t.Fatalf("got %v, want an error naming the socket", err)
	}
}
