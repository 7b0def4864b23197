// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/api/apitest"
	"github.com/xlb-dev/xlb/internal/config"
)

// etagOf returns the ETag GET /v1/config sends.
func etagOf(t *testing.T, sock string) string {
	t.Helper()
	resp, _ := rawDo(t, sock, "GET", "/v1/config", "", nil, nil)
	return resp.Header.Get("ETag")
}

// TestRevisions follows the revision through writes: it starts at 1,
// counts every change, not a write that changes nothing, and every
// write's answer carries the new one as its ETag and revision.
func TestRevisions(t *testing.T) {
	b, sock := apitest.Serve(t, baseConfig)
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	if got := etagOf(t, sock); got != `"1"` {
		t.Fatalf("ETag %s at the start, want \"1\"", got)
	}
	for _, tc := range []struct {
		name, method, path, contentType, body string
		want                                  uint64
	}{
		{"same file", "POST", "/v1/apply", "application/yaml", baseConfig, 1},
		{"new weight", "PUT", svc + "/reals/198.51.100.1/8080", "application/json", `{"weight": 4}`, 2},
		{"same weight", "PUT", svc + "/reals/198.51.100.1/8080", "application/json", `{"weight": 4}`, 2},
		{"a name only", "PUT", svc, "application/json", `{"name": "web"}`, 3},
		{"add real", "POST", svc + "/reals", "application/json", `{"address": "198.51.100.2", "port": 8080}`, 4},
		{"refused", "POST", svc + "/reals", "application/json", `{"address": "198.51.100.2", "port": 8080}`, 4},
		{"file", "POST", "/v1/apply", "application/yaml", baseConfig, 5},
	} {
		resp, data := rawDo(t, sock, tc.method, tc.path, tc.contentType, nil, []byte(tc.body))
		if got := etagOf(t, sock); got != api.ETag(tc.want) {
			t.Errorf("%s: GET /v1/config ETag %s, want %s", tc.name, got, api.ETag(tc.want))
		}
		if resp.StatusCode != http.StatusOK {
			continue
		}
		var res api.ApplyResult
		if err := json.Unmarshal(data, &res); err != nil || res.Revision != tc.want || resp.Header.Get("ETag") != api.ETag(tc.want) {
			t.Errorf("%s: answer %s with ETag %s, want revision %d in both", tc.name, data, resp.Header.Get("ETag"), tc.want)
		}
	}
	if _, rev := b.ConfigRevision(); rev != 5 {
		t.Errorf("backend at revision %d, want 5", rev)
	}
}

// TestIfMatch sends each write with an If-Match: the current revision or
// none ("*", no header: last writer wins) apply; a stale one is refused
// with 412 naming the revision in force and changes nothing; one that is
// not a revision is a 400.
func TestIfMatch(t *testing.T) {
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	writes := []struct {
		name, method, path, contentType, body string
	}{
		{"apply", "POST", "/v1/apply", "application/yaml", strings.Replace(baseConfig, "port: 8080}", "port: 8080, weight: 7}", 1)},
		{"add service", "POST", "/v1/services", "application/json", `{"vip": "192.0.2.11", "port": 53, "protocol": "udp"}`},
		{"edit service", "PUT", svc, "application/json", `{"scheduler": "sh"}`},
		{"delete service", "DELETE", svc, "", ""},
		{"add real", "POST", svc + "/reals", "application/json", `{"address": "198.51.100.2", "port": 8080}`},
		{"edit real", "PUT", svc + "/reals/198.51.100.1/8080", "application/json", `{"weight": 7}`},
		{"delete real", "DELETE", svc + "/reals/198.51.100.1/8080", "", ""},
		{"add local IP", "POST", svc + "/laddrs", "application/json", `{"address": "198.51.100.253"}`},
		{"delete local IP", "DELETE", svc + "/laddrs/198.51.100.254", "", ""},
	}
	for _, tc := range []struct {
		name       string
		ifMatch    []string // header values
		wantStatus int
		wantErr    string
	}{
		{"current", []string{`"2"`}, 200, ""},
		{"none", nil, 200, ""},
		{"any", []string{"*"}, 200, ""},
		{"stale", []string{`"1"`}, 412, `If-Match: the configuration is at revision 2, not 1`},
		{"ahead", []string{`"3"`}, 412, `is at revision 2, not 3`},
		{"unquoted", []string{`2`}, 400, `If-Match 2: want a revision from 1 up in double quotes`},
		{"weak", []string{`W/"2"`}, 400, `a weak entity tag never matches`},
		{"list", []string{`"1", "2"`}, 400, `give one revision`},
		{"two headers", []string{`"1"`, `"2"`}, 400, `give one revision`},
		{"zero", []string{`"0"`}, 400, `from 1 up`},
		{"not a number", []string{`"two"`}, 400, `from 1 up`},
	} {
		for _, wr := range writes {
			t.Run(tc.name+"/"+wr.name, func(t *testing.T) {
				b, sock := apitest.Serve(t, baseConfig)
				// revision 2: a change the writer did not see
				if _, err := api.NewClient(sock).Change(context.Background(), "PUT", svc, map[string]any{"name": "web"}); err != nil {
					t.Fatal(err)
				}
				before, _ := json.Marshal(b.Config())
				var body []byte
				if wr.body != "" {
					body = []byte(wr.body)
				}
				resp, data := rawDo(t, sock, wr.method, wr.path, wr.contentType, http.Header{"If-Match": tc.ifMatch}, body)
				after, _ := json.Marshal(b.Config())
				if tc.wantStatus == 200 {
					if resp.StatusCode != 200 || string(before) == string(after) {
						t.Fatalf("status %d %s, changed %v; want 200 and a change", resp.StatusCode, data, string(before) != string(after))
					}
					return
				}
				var e api.Error
				_ = json.Unmarshal(data, &e)
				if resp.StatusCode != tc.wantStatus || !strings.Contains(e.Error, tc.wantErr) {
					t.Errorf("status %d %q, want %d with %q", resp.StatusCode, e.Error, tc.wantStatus, tc.wantErr)
				}
				if tc.wantStatus == 412 && (e.Revision != 2 || resp.Header.Get("ETag") != `"2"`) {
					t.Errorf("412 with revision %d and ETag %s, want both to name revision 2", e.Revision, resp.Header.Get("ETag"))
				}
				if string(before) != string(after) {
					t.Errorf("a refused write changed the configuration:\n%s\n%s", before, after)
				}
			})
		}
	}
}

// TestClientEdit checks the client's read-modify-write: an edit that
// someone else's change overtakes is redone on the new configuration,
// keeping both changes, and one that keeps being overtaken gives up after
// api.EditAttempts, changing nothing.
func TestClientEdit(t *testing.T) {
	ctx := context.Background()
	svc := api.ServicePath("tcp", "192.0.2.10", 80)
	setTimeout := func(cfg *config.Config) { cfg.Timeouts = &config.Timeouts{TCP: 600} }

	t.Run("overtaken once", func(t *testing.T) {
		b, sock := apitest.Serve(t, baseConfig)
		c := api.NewClient(sock)
		runs := 0
		res, err := c.Edit(ctx, func(cfg *config.Config) error {
			runs++
			if runs == 1 { // someone else adds a real between the read and the write
				if _, err := c.Change(ctx, "POST", svc+"/reals", config.Real{Address: "198.51.100.2", Port: 8080}); err != nil {
					return err
				}
			}
			setTimeout(cfg)
			return nil
		})
		if err != nil || runs != 2 || !res.Changed || res.Revision != 3 {
			t.Fatalf("Edit: %+v, %v after %d runs; want a change to revision 3 on the second run", res, err, runs)
		}
		cfg := b.Config()
		if len(cfg.Services[0].Reals) != 2 || cfg.Timeouts == nil || cfg.Timeouts.TCP != 600 {
			t.Errorf("configuration %+v, want the other's real and the edit's timeout", cfg)
		}
	})
	t.Run("always overtaken", func(t *testing.T) {
		b, sock := apitest.Serve(t, baseConfig)
		c := api.NewClient(sock)
		runs := 0
		_, err := c.Edit(ctx, func(cfg *config.Config) error {
			runs++
			if _, err := c.Change(ctx, "PUT", svc+"/reals/198.51.100.1/8080", api.Weight(runs)); err != nil {
				return err
			}
			setTimeout(cfg)
			return nil
		})
		if !api.IsStale(err) || runs != api.EditAttempts || !strings.Contains(err.Error(), "attempts") {
			t.Fatalf("Edit: %v after %d runs; want it to give up stale after %d", err, runs, api.EditAttempts)
		}
		if b.Config().Timeouts != nil {
			t.Error("the edit that gave up changed the timeouts")
		}
	})
	t.Run("edit fails", func(t *testing.T) {
		b, sock := apitest.Serve(t, baseConfig)
		errNo := errors.New("no")
		if _, err := api.NewClient(sock).Edit(ctx, func(*config.Config) error { return errNo }); !errors.Is(err, errNo) {
			t.Fatalf("Edit: %v, want the edit's error", err)
		}
		if b.Applies() != 0 {
			t.Error("a failed edit was applied")
		}
	})
	t.Run("refused", func(t *testing.T) {
		b, sock := apitest.Serve(t, baseConfig)
		_, err := api.NewClient(sock).Edit(ctx, func(cfg *config.Config) error {
			cfg.Services[0].Port = 70000
			return nil
		})
		if !api.IsClientError(err) || api.IsStale(err) || !strings.Contains(err.Error(), "services[0].port") {
			t.Fatalf("Edit: %v, want the daemon's 400", err)
		}
		if b.Applies() != 0 {
			t.Error("a refused edit was applied")
		}
	})
}
