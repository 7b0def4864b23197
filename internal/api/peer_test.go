// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// okHandler answers every request it gets with 200.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestGuard checks who may do what, with the peer put in the request's
// context as ConnContext puts it.
func TestGuard(t *testing.T) {
	const group = 4242 // the read group
	withGroup := Access{readGroup: "xlbread", readGID: group}
	rootOnly := Access{readGID: -1}
	root := &Peer{UID: 0, GID: 0}
	member := &Peer{UID: 1000, GID: group}
	memberBySupplementary := &Peer{UID: 1000, GID: 1000, Groups: []uint32{27, group}}
	other := &Peer{UID: 1000, GID: 1000, Groups: []uint32{27}}
	for _, tc := range []struct {
		name   string
		access Access
		peer   *Peer // nil: none recorded
		method string
		want   int
		msg    string // part of the JSON error
	}{
		{"root reads", withGroup, root, http.MethodGet, 200, ""},
		{"root writes", withGroup, root, http.MethodPost, 200, ""},
		{"root deletes, root only", rootOnly, root, http.MethodDelete, 200, ""},
		{"member reads", withGroup, member, http.MethodGet, 200, ""},
		{"member heads", withGroup, member, http.MethodHead, 200, ""},
		{"supplementary member reads", withGroup, memberBySupplementary, http.MethodGet, 200, ""},
		{"member posts", withGroup, member, http.MethodPost, 403, "the read group xlbread may only read (GET); POST needs root"},
		{"member puts", withGroup, memberBySupplementary, http.MethodPut, 403, "PUT needs root"},
		{"member deletes", withGroup, member, http.MethodDelete, 403, "DELETE needs root"},
		{"other reads", withGroup, other, http.MethodGet, 403, "uid 1000 is neither root nor in the API's read group xlbread"},
		{"other writes", withGroup, other, http.MethodPost, 403, "neither root nor in the API's read group"},
		{"group member, no read group", rootOnly, member, http.MethodGet, 403, "uid 1000 is not root: the API is root's"},
		{"unknown peer", withGroup, nil, http.MethodGet, 403, "the credentials of this connection are unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/v1/services", nil)
			if tc.peer != nil {
				req = req.WithContext(withPeer(context.Background(), *tc.peer))
			}
			rec := httptest.NewRecorder()
			tc.access.Guard(okHandler, quiet).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if tc.want == 200 {
				return
			}
			var e Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("body %q (%s) is not a JSON error: %v", rec.Body, rec.Header().Get("Content-Type"), err)
			}
			if !strings.HasPrefix(e.Error, "forbidden: ") || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("error %q, want forbidden: ...%s", e.Error, tc.msg)
			}
		})
	}
}

func TestNewAccess(t *testing.T) {
	if _, err := NewAccess("xlb-no-such-group"); err == nil || !strings.Contains(err.Error(), `api read group: no group "xlb-no-such-group"`) {
		t.Errorf("error %v, want one naming the group", err)
	}
	a, err := NewAccess("")
	if err != nil || a.readGID != -1 {
		t.Errorf("NewAccess(\"\") = %+v, %v; want root only", a, err)
	}
}

// TestClosedDir checks the search for a directory that keeps the read
// group from the socket.
func TestClosedDir(t *testing.T) {
	base := testenv.SharedTempDir(t) // it and its parents: open to others
	for _, tc := range []struct {
		mode   os.FileMode
		closed bool
	}{
		{0o711, false},
		{0o755, false},
		{0o700, true},
		{0o750, true}, // group x, but not the read group's directory
	} {
		dir := filepath.Join(base, tc.mode.String())
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		want := ""
		if tc.closed {
			want = dir
		}
		if got := closedDir(dir, 4242); got != want {
			t.Errorf("mode %v: closedDir = %q, want %q", tc.mode, got, want)
		}
	}
}
