// SPDX-License-Identifier: Apache-2.0

// Package web serves the daemon's live page (xlb daemon --web ADDR): the
// services and reals with their weights, health and connections, rates
// as sparklines, drops by reason and the connection tables, in the class
// of HAProxy's stats page. It is read-only: the page and the API's
// GET /v1/status, /v1/services and /v1/stats, nothing else. The page is
// plain HTML, CSS and JavaScript embedded in the binary: no build step.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// readOnlyAPI are the API routes the page reads.
var readOnlyAPI = []string{"/v1/status", "/v1/services", "/v1/stats"}

// Handler serves the page, and the routes of readOnlyAPI from apiHandler
// (the daemon's API handler); any other method than GET or HEAD is
// refused with 405, any other path with 404.
func Handler(apiHandler http.Handler) http.Handler {
	files, _ := fs.Sub(static, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	for _, p := range readOnlyAPI {
		mux.Handle("GET "+p, apiHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: the page and GET "+strings.Join(readOnlyAPI, ", ")+" only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
		mux.ServeHTTP(w, r)
	})
}
