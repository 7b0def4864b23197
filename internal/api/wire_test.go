// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// wireConfig has a persistent IPv4 service grouped by /24 with a health
// check and an IPv6 service without local IPs.
const wireConfig = `interfaces: [eth0]
services:
  - vip: 192.0.2.10
    port: 80
    protocol: tcp
    scheduler: wrr
    persistent: 300
    netmask: 255.255.255.0
    local_ips: [198.51.100.254]
    health_check: {type: tcp}
    reals:
      - {address: 198.51.100.1, port: 8080, weight: 2}
  - vip: 2001:db8::10
    port: 53
    protocol: udp
    scheduler: sh
    reals:
      - {address: 2001:db8::1, port: 53}
`

// TestWire pins the JSON the read endpoints send, byte for byte: the
// API's typed fields must keep the wire format of docs/openapi.json.
func TestWire(t *testing.T) {
	f, sock := apitest.Serve(t, wireConfig)
	f.ConnEntries = []loadbalancer.ConnEntry{
		{Proto: loadbalancer.TCP, From: netip.MustParseAddrPort("203.0.113.7:5000"), To: netip.MustParseAddrPort("192.0.2.10:80"),
			Peer: netip.MustParseAddrPort("198.51.100.254:40000"), State: loadbalancer.StateEstablished, Idle: 1500 * time.Millisecond,
			Timeout: 900 * time.Second},
		{Proto: loadbalancer.UDP, From: netip.MustParseAddrPort("[2001:db8::1]:53"), To: netip.MustParseAddrPort("[2001:db8::fe]:40001"),
			Peer: netip.MustParseAddrPort("[2001:db8:1::7]:5353"), Reverse: true, State: loadbalancer.StateUDP,
			Timeout: 300 * time.Second},
	}
	hc := rawClient(sock)
	for _, tc := range []struct{ path, want string }{
		{"/v1/services", `[{"vip":"192.0.2.10","port":80,"protocol":"tcp","scheduler":"wrr","mode":"fullnat","persistent":300,` +
			`"netmask":"255.255.255.0","local_ips":["198.51.100.254"],"stats":{"conns":0,"in_packets":0,"out_packets":0,"in_bytes":0,"out_bytes":0},"no_lport":0,` +
			`"reals":[{"address":"198.51.100.1","port":8080,"weight":2,"health":"up","active_conns":1,"inactive_conns":0,` +
			`"stats":{"conns":0,"in_packets":0,"out_packets":0,"in_bytes":0,"out_bytes":0}}]},` +
			`{"vip":"2001:db8::10","port":53,"protocol":"udp","scheduler":"sh","mode":"fullnat","local_ips":null,` +
			`"stats":{"conns":0,"in_packets":0,"out_packets":0,"in_bytes":0,"out_bytes":0},"no_lport":0,` +
			`"reals":[{"address":"2001:db8::1","port":53,"weight":1,"active_conns":1,"inactive_conns":0,` +
			`"stats":{"conns":0,"in_packets":0,"out_packets":0,"in_bytes":0,"out_bytes":0}}]}]`},
		{"/v1/conns", `[{"protocol":"tcp","from":"203.0.113.7:5000","to":"192.0.2.10:80","peer":"198.51.100.254:40000",` +
			`"reverse":false,"state":"ESTABLISHED","idle_seconds":1.5,"timeout_seconds":900},` +
			`{"protocol":"udp","from":"[2001:db8::1]:53","to":"[2001:db8::fe]:40001","peer":"[2001:db8:1::7]:5353",` +
			`"reverse":true,"state":"UDP","idle_seconds":0,"timeout_seconds":300}]`},
		{"/v1/stats", `{"drops":{"ip_truncated":2},"verdicts":{"tx":5},"redirect_tx_failed":0,"redirect_errors":0,"icmp_too_big_sent":0,` +
			`"conn_tables":[{"family":"ipv4","max_entries":1024,"connections":512,"memory_bytes":106496,"entries":300,"live_entries":256,"occupancy":0.25,` +
			`"inserts":400,"removals":100,"refused":0,"half_open_drops":4,"reply_misses":3,"forward_misses":1}],` +
			`"local_ips":[{"address":"198.51.100.254","no_lport":7}]}`},
	} {
		resp, err := hc.Get("http://xlb" + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := json.Compact(&got, body); err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		if got.String() != tc.want {
			t.Errorf("GET %s:\n got %s\nwant %s", tc.path, got.String(), tc.want)
		}
	}
}
