// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/config"
)

// TestIpvsadmEditOvertaken runs the ipvsadm commands that read, edit and
// write back the whole configuration while another writer adds a real
// between their read and their write: the command must redo its edit on
// the new configuration (If-Match, then a retry on 412), so that the
// other writer's real stays, and send the revision it read.
func TestIpvsadmEditOvertaken(t *testing.T) {
	const restore = "-A -t 192.0.2.11:80 -s sh\n-a -t 192.0.2.11:80 -r 198.51.100.1:8080 -w 2\n"
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		check func(c *config.Config) bool // the command's own change
	}{
		{"--set", "", []string{"--set", "600", "0", "0"}, func(c *config.Config) bool { return c.Timeouts != nil && c.Timeouts.TCP == 600 }},
		{"-R", restore, []string{"-R"}, func(c *config.Config) bool { return len(c.Services) == 2 && c.Services[1].Scheduler == "sh" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var ifMatch []string
			b, sock := apitest.ServeWrapped(t, testConfig, func(b *apitest.Backend, h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v1/apply" {
						mu.Lock()
						ifMatch = append(ifMatch, r.Header.Get("If-Match"))
						first := len(ifMatch) == 1
						mu.Unlock()
						if first { // another writer gets in between the read and this write
							if _, _, err := b.Update(0, func(c *config.Config) error {
								c.Services[0].Reals = append(c.Services[0].Reals, config.Real{Address: "198.51.100.3", Port: 8080})
								return nil
							}); err != nil {
								t.Error(err)
							}
						}
					}
					h.ServeHTTP(w, r)
				})
			})
			if code, _, errOut := runIpvsadmTest(sock, tc.stdin, tc.args...); code != 0 {
				t.Fatalf("ipvsadm %v: exit %d: %s", tc.args, code, errOut)
			}
			c := b.Config()
			hasOther := slices.ContainsFunc(c.Services[0].Reals, func(r config.Real) bool { return r.Address == "198.51.100.3" })
			if !hasOther || !tc.check(c) {
				doc, _ := json.Marshal(c)
				t.Errorf("configuration %s: want the other writer's real 198.51.100.3 and the command's change", doc)
			}
			if want := []string{`"1"`, `"2"`}; !slices.Equal(ifMatch, want) {
				t.Errorf("the applies sent If-Match %q, want %q (the revision read, then the one read again)", ifMatch, want)
			}
		})
	}
}
