// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
)

// DefaultSocket is where the daemon serves the API unless told otherwise.
const DefaultSocket = "/run/xlb/xlb.sock"

// Client talks to the daemon over its unix socket.
type Client struct {
	socket string
	http   *http.Client
}

// NewClient returns a client of the daemon listening on socket.
func NewClient(socket string) *Client {
	return &Client{socket: socket, http: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}},
	}}
}

// StatusError is an error the daemon answered with.
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// IsClientError tells whether err is the daemon refusing a request as
// invalid, unknown or conflicting (the CLI exits 2 for those).
func IsClientError(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status >= 400 && se.Status < 500
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://xlb"+path, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read daemon answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e Error
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("daemon answered %s", resp.Status)
		}
		return &StatusError{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode daemon answer: %w", err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	return c.do(ctx, method, path, "application/json", body, out)
}

// ServicePath is the API path of a service.
func ServicePath(proto, vip string, port int) string {
	return fmt.Sprintf("/v1/services/%s/%s/%d", url.PathEscape(proto), url.PathEscape(vip), port)
}

// Version returns the daemon's version.
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	return v, c.send(ctx, http.MethodGet, "/v1/version", nil, &v)
}

// Config returns the configuration in force.
func (c *Client) Config(ctx context.Context) (*config.Config, error) {
	var cfg config.Config
	return &cfg, c.send(ctx, http.MethodGet, "/v1/config", nil, &cfg)
}

// Apply applies a whole configuration file's contents.
func (c *Client) Apply(ctx context.Context, yaml []byte) (ApplyResult, error) {
	var res ApplyResult
	return res, c.do(ctx, http.MethodPost, "/v1/apply", "application/yaml", bytes.NewReader(yaml), &res)
}

// Services lists the services with their reals and counters.
func (c *Client) Services(ctx context.Context) ([]Service, error) {
	var out []Service
	return out, c.send(ctx, http.MethodGet, "/v1/services", nil, &out)
}

// Change sends one change (POST, PUT or DELETE on path with body in).
func (c *Client) Change(ctx context.Context, method, path string, in any) (ApplyResult, error) {
	var res ApplyResult
	return res, c.send(ctx, method, path, in, &res)
}

// Conns lists connection entries, of one VIP when vip is not empty.
func (c *Client) Conns(ctx context.Context, vip string) ([]Conn, error) {
	path := "/v1/conns"
	if vip != "" {
		path += "?vip=" + url.QueryEscape(vip)
	}
	var out []Conn
	return out, c.send(ctx, http.MethodGet, path, nil, &out)
}

// Stats returns the global counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	return st, c.send(ctx, http.MethodGet, "/v1/stats", nil, &st)
}
