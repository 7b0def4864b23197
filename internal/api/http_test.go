// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
)

// rawClient is a plain HTTP client of the API socket, for what
// api.Client does not show: status codes, headers, bodies as sent.
func rawClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

// rawDo sends one request with the headers given (and a body when not
// nil) and returns the response, its body read, and that body.
func rawDo(t *testing.T, sock, method, path, contentType string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://xlb"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := rawClient(sock).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp, data
}

// rawRequest is rawDo answering with the status and, when it is not 200,
// the error the body holds.
func rawRequest(t *testing.T, sock, method, path, contentType string, header http.Header, body []byte) (int, api.Error) {
	t.Helper()
	resp, data := rawDo(t, sock, method, path, contentType, header, body)
	var e api.Error
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(data, &e); err != nil || e.Error == "" {
			t.Fatalf("%s %s: status %d with a body that is not an Error (%v): %q", method, path, resp.StatusCode, err, data)
		}
	}
	return resp.StatusCode, e
}
