// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// TestRefusedAs400: the configuration checks beyond the file's syntax
// (addresses that are VIPs, addresses that cannot serve, the data path's
// capacity) answer 400 with the field path, and change nothing.
func TestRefusedAs400(t *testing.T) {
	lim, err := datapath.SpecLimits()
	if err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	many.WriteString("interfaces: [eth0]\nservices:\n")
	for i := range lim.Services + 1 {
		fmt.Fprintf(&many, "  - {vip: 192.0.2.10, port: %d, protocol: tcp}\n", i+1)
	}
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		want         string
	}{
		{"real that is the VIP", "POST", svc + "/reals", config.Real{Address: "192.0.2.10", Port: 8080},
			"services[0].reals[1].address: 192.0.2.10 is the VIP of services[0]"},
		{"local IP that is a VIP", "POST", svc + "/laddrs", api.LocalIP{Address: "192.0.2.10"},
			"services[0].local_ips[1]: 192.0.2.10 is the VIP of services[0]"},
		{"loopback VIP", "POST", "/v1/services", config.Service{VIP: "127.0.0.1", Port: 0, Protocol: "tcp"},
			"services[1].vip: 127.0.0.1 is a loopback address"},
		{"more services than the data path holds", "POST", "/v1/apply", many.String(),
			fmt.Sprintf("services: %d services; the data path holds at most %d", lim.Services+1, lim.Services)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := serve(t)
			before := f.Config()
			var err error
			if s, ok := tc.body.(string); ok {
				_, err = c.Apply(context.Background(), []byte(s))
			} else {
				_, err = c.Change(context.Background(), tc.method, tc.path, tc.body)
			}
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Message, tc.want) {
				t.Fatalf("got %v, want 400 with %q", err, tc.want)
			}
			if f.Applies() != 0 || !sameConfig(before, f.Config()) {
				t.Fatal("a refused change changed the configuration")
			}
		})
	}
}
