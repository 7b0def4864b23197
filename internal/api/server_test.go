// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

const baseConfig = `interfaces: [eth0]
services:
  - vip: 192.0.2.10
    port: 80
    protocol: tcp
    local_ips: [198.51.100.254]
    reals:
      - {address: 198.51.100.1, port: 8080}
`

func serve(t *testing.T) (*apitest.Backend, *api.Client) {
	b, sock := apitest.Serve(t, baseConfig)
	return b, api.NewClient(sock)
}

// TestChanges sends each change to a fresh server and checks the status
// and error, and that a refused change leaves the configuration as it was.
func TestChanges(t *testing.T) {
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	tests := []struct {
		name         string
		method, path string
		body         any
		wantStatus   int
		wantErr      string // substring of the error; "" for success
		check        func(*config.Config) string
	}{
		{"add service", "POST", "/v1/services", config.Service{VIP: "192.0.2.11", Port: 53, Protocol: "udp", LocalIPs: []string{"198.51.100.254"}}, 200, "",
			func(c *config.Config) string { return want(len(c.Services) == 2, "2 services") }},
		{"add existing service", "POST", "/v1/services", config.Service{VIP: "192.0.2.10", Port: 80, Protocol: "tcp"}, 409, "exists", nil},
		{"add service with bad VIP", "POST", "/v1/services", config.Service{VIP: "192.0.2.300", Port: 80, Protocol: "tcp"}, 400, `services[1].vip: "192.0.2.300" is not an IP address`, nil},
		{"add service without local IPs (DPVS: added later)", "POST", "/v1/services", config.Service{VIP: "192.0.2.12", Port: 80, Protocol: "tcp"}, 200, "",
			func(c *config.Config) string {
				return want(len(c.Services) == 2 && len(c.Services[1].LocalIPs) == 0, "2 services")
			}},
		{"add persistent wlc service with a check", "POST", "/v1/services", config.Service{VIP: "192.0.2.13", Port: 443, Protocol: "tcp", Scheduler: "wlc",
			Persistent: 600, Netmask: "255.255.255.0", HealthCheck: &config.HealthCheck{Type: "http", Path: "/health"}}, 200, "",
			func(c *config.Config) string {
				s := c.Services[1]
				return want(s.Persistent == 600 && s.HealthCheck != nil && s.HealthCheck.Path == "/health", "the persistence and the check")
			}},
		{"edit persistence", "PUT", svc, map[string]any{"persistent": 300, "netmask": "24"}, 200, "",
			func(c *config.Config) string { return want(c.Services[0].Persistent == 300, "persistent 300") }},
		{"edit bad netmask", "PUT", svc, map[string]any{"persistent": 300, "netmask": "255.0.255.0"}, 400, "services[0].netmask", nil},
		{"zero one service", "POST", "/v1/stats/zero", api.ZeroRequest{Protocol: "tcp", VIP: "192.0.2.10", Port: 80}, 200, "",
			func(c *config.Config) string { return want(len(c.Services) == 1, "the configuration unchanged") }},
		{"zero everything", "POST", "/v1/stats/zero", nil, 200, "",
			func(c *config.Config) string { return want(len(c.Services) == 1, "the configuration unchanged") }},
		{"zero a missing service", "POST", "/v1/stats/zero", api.ZeroRequest{Protocol: "tcp", VIP: "192.0.2.99", Port: 80}, 404, "not found", nil},
		{"zero with a bad protocol", "POST", "/v1/stats/zero", api.ZeroRequest{Protocol: "sctp", VIP: "192.0.2.10", Port: 80}, 400, "protocol", nil},
		{"unknown field", "POST", "/v1/services", map[string]any{"vip": "192.0.2.12", "colour": "red"}, 400, `unknown field "colour"`, nil},
		{"edit scheduler keeps reals", "PUT", svc, map[string]any{"scheduler": "wrr"}, 200, "",
			func(c *config.Config) string {
				return want(c.Services[0].Scheduler == "wrr" && len(c.Services[0].Reals) == 1, "wrr with its real")
			}},
		{"edit unknown scheduler", "PUT", svc, map[string]any{"scheduler": "fastest"}, 400, "services[0].scheduler", nil},
		{"edit missing service", "PUT", api.ServicePath("tcp", "192.0.2.99", 80), map[string]any{"scheduler": "wrr"}, 404, "no service", nil},
		{"bad protocol in path", "PUT", api.ServicePath("sctp", "192.0.2.10", 80), map[string]any{}, 400, "sctp", nil},
		{"bad port in path", "DELETE", "/v1/services/tcp/192.0.2.10/99999", nil, 400, `port "99999"`, nil},
		{"delete service", "DELETE", svc, nil, 200, "", func(c *config.Config) string { return want(len(c.Services) == 0, "no services") }},
		{"add real", "POST", svc + "/reals", config.Real{Address: "198.51.100.2", Port: 8080}, 200, "",
			func(c *config.Config) string { return want(len(c.Services[0].Reals) == 2, "2 reals") }},
		{"add real of the other family", "POST", svc + "/reals", config.Real{Address: "2001:db8::2", Port: 8080}, 400, "services[0].reals[1].address", nil},
		{"add existing real", "POST", svc + "/reals", config.Real{Address: "198.51.100.1", Port: 8080}, 409, "exists", nil},
		{"weight out of range", "PUT", svc + "/reals/198.51.100.1/8080", api.Weight(100000), 400, "services[0].reals[0].weight", nil},
		{"drain real", "PUT", svc + "/reals/198.51.100.1/8080", api.Weight(0), 200, "",
			func(c *config.Config) string {
				w := c.Services[0].Reals[0].Weight
				return want(w != nil && *w == 0, "weight 0")
			}},
		{"edit missing real", "PUT", svc + "/reals/198.51.100.9/8080", api.Weight(2), 404, "no real", nil},
		{"delete real", "DELETE", svc + "/reals/198.51.100.1/8080", nil, 200, "",
			func(c *config.Config) string { return want(len(c.Services[0].Reals) == 0, "no reals") }},
		{"add local IP", "POST", svc + "/laddrs", api.LocalIP{Address: "198.51.100.253"}, 200, "",
			func(c *config.Config) string { return want(len(c.Services[0].LocalIPs) == 2, "2 local IPs") }},
		{"delete last local IP", "DELETE", svc + "/laddrs/198.51.100.254", nil, 200, "",
			func(c *config.Config) string { return want(len(c.Services[0].LocalIPs) == 0, "no local IP") }},
		{"delete missing local IP", "DELETE", svc + "/laddrs/198.51.100.1", nil, 404, "no local IP", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := serve(t)
			before := f.Config()
			_, err := c.Change(context.Background(), tc.method, tc.path, tc.body)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("%s %s: %v", tc.method, tc.path, err)
				}
				if msg := tc.check(f.Config()); msg != "" {
					t.Fatal(msg)
				}
				return
			}
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status != tc.wantStatus || !strings.Contains(se.Message, tc.wantErr) {
				t.Fatalf("got %v, want status %d with %q", err, tc.wantStatus, tc.wantErr)
			}
			if f.Applies() != 0 || !sameConfig(before, f.Config()) {
				t.Fatalf("refused change changed the configuration")
			}
		})
	}
}

func want(ok bool, what string) string {
	if ok {
		return ""
	}
	return "want " + what
}

func sameConfig(a, b *config.Config) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestApply covers the whole-file apply: a valid file changes only what
// differs; a file with an unknown key or a bad value changes nothing.
func TestApply(t *testing.T) {
	f, c := serve(t)
	ctx := context.Background()
	res, err := c.Apply(ctx, []byte(baseConfig))
	if err != nil || res.Changed {
		t.Fatalf("same file: %+v, %v; want no change", res, err)
	}
	next := strings.Replace(baseConfig, "port: 8080}", "port: 8080, weight: 3}", 1)
	if res, err = c.Apply(ctx, []byte(next)); err != nil || !res.Changed || len(res.Changes) != 1 {
		t.Fatalf("weight change: %+v, %v; want one change", res, err)
	}
	before := f.Config()
	for _, tc := range []struct{ name, yaml, wantErr string }{
		{"unknown key", baseConfig + "colour: red\n", `unknown key "colour" at the top level`},
		{"bad address", strings.Replace(baseConfig, "198.51.100.1", "198.51.100.300", 1), `services[0].reals[0].address: "198.51.100.300" is not an IP address`},
		{"empty", "", "empty"},
		// the daemon's own rule, through the same apply (internal/apply)
		{"interfaces", strings.Replace(baseConfig, "interfaces: [eth0]", "interfaces: [eth0, eth1]", 1),
			"changing the attached interfaces needs a daemon restart"},
	} {
		_, err := c.Apply(ctx, []byte(tc.yaml))
		var se *api.StatusError
		if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Message, tc.wantErr) {
			t.Errorf("%s: got %v, want 400 with %q", tc.name, err, tc.wantErr)
		}
	}
	if !sameConfig(before, f.Config()) {
		t.Fatal("a refused file changed the configuration")
	}
}

// TestReads covers the read endpoints.
func TestReads(t *testing.T) {
	f, c := serve(t)
	ctx := context.Background()
	vip, real, local := netip.MustParseAddrPort("192.0.2.10:80"), netip.MustParseAddrPort("198.51.100.1:8080"), netip.MustParseAddrPort("198.51.100.254:40000")
	f.ConnEntries = []loadbalancer.ConnEntry{
		{Proto: loadbalancer.TCP, From: netip.MustParseAddrPort("203.0.113.7:5000"), To: vip, Peer: real, Idle: time.Second},
		{Proto: loadbalancer.TCP, From: real, To: local, Peer: netip.MustParseAddrPort("203.0.113.7:5000"), Reverse: true},
		{Proto: loadbalancer.TCP, From: netip.MustParseAddrPort("203.0.113.7:5001"), To: netip.MustParseAddrPort("192.0.2.99:80"), Peer: real},
	}
	svcs, err := c.Services(ctx)
	if err != nil || len(svcs) != 1 || svcs[0].VIP != vip.Addr() || len(svcs[0].Reals) != 1 || svcs[0].Reals[0].ActiveConns != 1 {
		t.Fatalf("services: %+v, %v", svcs, err)
	}
	all, err := c.Conns(ctx, "")
	if err != nil || len(all) != 3 {
		t.Fatalf("conns: %+v, %v; want 3", all, err)
	}
	one, err := c.Conns(ctx, "192.0.2.10")
	if err != nil || len(one) != 1 || one[0].From != netip.MustParseAddrPort("203.0.113.7:5000") || one[0].IdleSecs != 1 {
		t.Fatalf("conns of the VIP: %+v, %v; want the forward entry", one, err)
	}
	if _, err := c.Conns(ctx, "not-an-ip"); err == nil || !strings.Contains(err.Error(), "not-an-ip") {
		t.Fatalf("bad vip filter: %v", err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Drops["ip_truncated"] != 2 || st.Verdicts["tx"] != 5 {
		t.Fatalf("stats: %+v, %v", st, err)
	}
	if v, err := c.Version(ctx); err != nil || v.Version != "test" {
		t.Fatalf("version: %+v, %v", v, err)
	}
}

// TestOpenAPIDocument checks that the served document is docs/openapi.json
// and that it describes every route the server has, and only those.
func TestOpenAPIDocument(t *testing.T) {
	docs, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, api.OpenAPI) {
		t.Fatal("docs/openapi.json differs from internal/api/openapi.json: copy it")
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`HandleFunc\("([A-Z]+) (/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d routes in server.go", len(routes))
	}
	for _, r := range routes {
		route := r[1] + " " + r[2]
		if !documented[route] {
			t.Errorf("route %s is not in openapi.json", route)
		}
		delete(documented, route)
	}
	for route := range documented {
		t.Errorf("openapi.json documents %s, which the server does not have", route)
	}
}
