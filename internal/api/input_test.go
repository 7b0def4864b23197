// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/config"
)

// cutConfig returns a configuration file, baseConfig with a comment in
// the middle and a second service after it, that is just over
// api.MaxBody (then extra spaces) and laid out so that its first MaxBody
// bytes end in "port: 8" of the real's "port: 8080": cut there, it is
// still a valid file.
func cutConfig(t *testing.T, extra int) []byte {
	t.Helper()
	head := "interfaces: [eth0]\nservices:\n  - vip: 192.0.2.10\n    port: 80\n    protocol: tcp\n" +
		"    local_ips: [198.51.100.254]\n    reals:\n      - address: 198.51.100.1\n"
	cut := "        port: 8"
	tail := "080\n  - {vip: 192.0.2.11, port: 53, protocol: udp, local_ips: [198.51.100.254]}\n"
	pad := api.MaxBody - len(head) - len(cut) - len("#\n")
	doc := head + "#" + strings.Repeat("x", pad) + "\n" + cut + tail + strings.Repeat(" ", extra)
	if len(doc) <= api.MaxBody || doc[:api.MaxBody] != head+"#"+strings.Repeat("x", pad)+"\n"+cut {
		t.Fatal("cutConfig is not cut where it should be")
	}
	return []byte(doc)
}

// TestBodyLimit sends bodies just over api.MaxBody whose first MaxBody
// bytes are a valid request on their own: each must be refused whole
// with 413, naming the limit, and change nothing. A body of exactly
// MaxBody is served.
func TestBodyLimit(t *testing.T) {
	// the premise: the file cut at the limit parses and validates, with
	// the real's port 8
	cutCfg, err := config.Parse(cutConfig(t, 0)[:api.MaxBody])
	if err != nil {
		t.Fatalf("the cut file does not parse: %v", err)
	}
	if err := cutCfg.Validate(); err != nil || cutCfg.Services[0].Reals[0].Port != 8 || len(cutCfg.Services) != 1 {
		t.Fatalf("the cut file: %v, %+v; want one valid service with a real on port 8", err, cutCfg.Services)
	}
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	padJSON := func(v string) []byte { return []byte(v + strings.Repeat(" ", api.MaxBody+1-len(v))) }
	for _, tc := range []struct {
		name, method, path, contentType string
		body                            []byte
	}{
		{"apply", "POST", "/v1/apply", "application/yaml", cutConfig(t, 0)},
		{"apply far over", "POST", "/v1/apply", "application/yaml", cutConfig(t, api.MaxBody)},
		{"add service", "POST", "/v1/services", "application/json",
			padJSON(`{"vip": "192.0.2.11", "port": 53, "protocol": "udp", "local_ips": ["198.51.100.254"]}`)},
		{"edit real", "PUT", svc + "/reals/198.51.100.1/8080", "application/json", padJSON(`{"weight": 3}`)},
		{"edit service", "PUT", svc, "application/json", padJSON(`{"scheduler": "sh"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, sock := apitest.Serve(t, baseConfig)
			before := b.Config()
			status, e := rawRequest(t, sock, tc.method, tc.path, tc.contentType, nil, tc.body)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(e.Error, "4194304 bytes (4 MiB)") {
				t.Errorf("status %d, error %q; want 413 naming the limit of 4194304 bytes (4 MiB)", status, e.Error)
			}
			if b.Applies() != 0 || !sameConfig(before, b.Config()) {
				t.Error("a body over the limit changed the configuration")
			}
		})
	}
	t.Run("exactly the limit", func(t *testing.T) {
		b, sock := apitest.Serve(t, baseConfig)
		before := b.Config()
		body := []byte(baseConfig + "#" + strings.Repeat("x", api.MaxBody-len(baseConfig)-2) + "\n")
		if status, e := rawRequest(t, sock, "POST", "/v1/apply", "application/yaml", nil, body); status != http.StatusOK {
			t.Fatalf("status %d %q, want 200", status, e.Error)
		}
		if b.Applies() != 1 || !sameConfig(before, b.Config()) {
			t.Errorf("applied %d times: %+v; want the file once, as it was", b.Applies(), b.Config().Services)
		}
	})
}

// TestTrailingData refuses a JSON body with more after its value.
func TestTrailingData(t *testing.T) {
	b, sock := apitest.Serve(t, baseConfig)
	status, e := rawRequest(t, sock, "PUT", api.ServicePath("tcp", "192.0.2.10", 80)+"/reals/198.51.100.1/8080",
		"application/json", nil, []byte(`{"weight": 3} {"weight": 4}`))
	if status != http.StatusBadRequest || !strings.Contains(e.Error, "more data after the JSON value") {
		t.Errorf("status %d, error %q; want 400 for the data after the value", status, e.Error)
	}
	if b.Applies() != 0 {
		t.Error("the refused body changed the configuration")
	}
}

// editConfig has a real of weight 3 and a service with a health check
// and persistence, so that an edit that loses them shows.
const editConfig = `interfaces: [eth0]
services:
  - vip: 192.0.2.10
    port: 80
    protocol: tcp
    scheduler: wrr
    persistent: 300
    health_check: {type: http, path: /health}
    local_ips: [198.51.100.254]
    reals:
      - {address: 198.51.100.1, port: 8080, weight: 3}
`

// TestEditKeepsWhatIsLeftOut sends each PUT with an empty body and with
// one field: a field the body leaves out stays as it was, and a field it
// gives is replaced whole, never merged with what was there.
func TestEditKeepsWhatIsLeftOut(t *testing.T) {
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	real := svc + "/reals/198.51.100.1/8080"
	// unchanged returns the service as editConfig has it.
	unchanged := func(t *testing.T) config.Service {
		b, err := apitest.NewBackend(editConfig)
		if err != nil {
			t.Fatal(err)
		}
		return b.Config().Services[0]
	}
	for _, tc := range []struct {
		name, path, body string
		want             func(s *config.Service) // the change from editConfig's service
	}{
		{"real {}", real, `{}`, nil},
		{"real null weight", real, `{"weight": null}`, nil},
		{"real weight", real, `{"weight": 5}`, func(s *config.Service) { s.Reals[0].Weight = ptr(5) }},
		{"real weight 0 drains", real, `{"weight": 0}`, func(s *config.Service) { s.Reals[0].Weight = ptr(0) }},
		{"service {}", svc, `{}`, nil},
		{"service scheduler", svc, `{"scheduler": "sh"}`, func(s *config.Service) { s.Scheduler = "sh" }},
		{"service key in another case", svc, `{"Scheduler": "sh"}`, func(s *config.Service) { s.Scheduler = "sh" }},
		{"service reals replaced whole", svc, `{"reals": [{"address": "198.51.100.9", "port": 8080}]}`,
			func(s *config.Service) { s.Reals = []config.Real{{Address: "198.51.100.9", Port: 8080}} }},
		{"service health check replaced whole", svc, `{"health_check": {"type": "tcp"}}`,
			func(s *config.Service) { s.HealthCheck = &config.HealthCheck{Type: "tcp"} }},
		{"service null health check", svc, `{"health_check": null}`, func(s *config.Service) { s.HealthCheck = nil }},
		{"service null persistence", svc, `{"persistent": null}`, func(s *config.Service) { s.Persistent = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, sock := apitest.Serve(t, editConfig)
			if status, e := rawRequest(t, sock, "PUT", tc.path, "application/json", nil, []byte(tc.body)); status != http.StatusOK {
				t.Fatalf("status %d %q", status, e.Error)
			}
			want := unchanged(t)
			if tc.want != nil {
				tc.want(&want)
			}
			got, _ := json.Marshal(b.Config().Services[0])
			if w, _ := json.Marshal(want); !bytes.Equal(got, w) {
				t.Errorf("service after PUT %s:\n%s\nwant\n%s", tc.body, got, w)
			}
		})
	}
}

// TestRefusedEditKeepsTheService checks that a refused edit of the
// service's health check leaves the check in force as it was: the edit
// works on a copy, not on what the copy shares with the original.
func TestRefusedEditKeepsTheService(t *testing.T) {
	b, sock := apitest.Serve(t, editConfig)
	before, _ := json.Marshal(b.Config()) // now: a clone may share what it points to
	status, e := rawRequest(t, sock, "PUT", api.ServicePath("tcp", "192.0.2.10", 80), "application/json", nil,
		[]byte(`{"health_check": {"type": "smoke signals"}}`))
	if status != http.StatusBadRequest || !strings.Contains(e.Error, "health_check") {
		t.Fatalf("status %d %q, want 400 naming the health check", status, e.Error)
	}
	if after, _ := json.Marshal(b.Config()); !bytes.Equal(before, after) {
		t.Errorf("a refused edit changed the configuration in force:\n%s\nwas\n%s", after, before)
	}
}

func ptr(v int) *int { return &v }

// TestClientWeight checks that the client sends a weight of 0 (drain),
// not an empty body.
func TestClientWeight(t *testing.T) {
	b, sock := apitest.Serve(t, editConfig)
	path := api.ServicePath("tcp", "192.0.2.10", 80) + "/reals/198.51.100.1/8080"
	if _, err := api.NewClient(sock).Change(context.Background(), "PUT", path, api.Weight(0)); err != nil {
		t.Fatal(err)
	}
	if w := b.Config().Services[0].Reals[0].Weight; w == nil || *w != 0 {
		t.Errorf("weight %v, want 0", w)
	}
}
