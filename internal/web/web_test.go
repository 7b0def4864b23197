// SPDX-License-Identifier: Apache-2.0

package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/api/apitest"
)

const testConfig = `interfaces: [eth0]
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, local_ips: [198.51.100.254], reals: [{address: 198.51.100.1, port: 8080}]}
`

// TestHandlerIsReadOnly: the page and its files, the three API routes
// the page reads; every write, and every other API route, refused.
func TestHandlerIsReadOnly(t *testing.T) {
	b, err := apitest.NewBackend(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(api.Handler(b, "test", nil)))
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/", 200, `<script src="app.js">`},
		{"GET", "/app.js", 200, "function refresh()"},
		{"GET", "/style.css", 200, "svg.spark"},
		{"GET", "/v1/status", 200, `"warnings": []`},
		{"GET", "/v1/services", 200, `"vip": "192.0.2.10"`},
		{"GET", "/v1/stats", 200, `"drops"`},
		{"GET", "/v1/config", 404, ""},
		{"GET", "/v1/conns", 404, ""},
		{"GET", "/v1/drops/follow", 404, ""},
		{"POST", "/v1/apply", 405, "read-only"},
		{"PUT", "/v1/services/tcp/192.0.2.10/80", 405, "read-only"},
		{"DELETE", "/v1/services/tcp/192.0.2.10/80", 405, "read-only"},
		{"POST", "/v1/stats/zero", 405, "read-only"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
	}
	if b.Applies() != 0 {
		t.Error("a request through the page changed the configuration")
	}
}
