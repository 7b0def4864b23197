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
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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

// StatusError is an error the daemon answered with. Revision is the
// revision in force the daemon names in a 412 (a stale If-Match).
type StatusError struct {
	Status   int
	Message  string
	Revision uint64
}

func (e *StatusError) Error() string { return e.Message }

// IsClientError tells whether err is the daemon refusing a request as
// invalid, unknown or conflicting (the CLI exits 2 for those).
func IsClientError(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status >= 400 && se.Status < 500
}

// IsStale tells whether err is the daemon refusing a write because the
// configuration is no longer at the revision it was made against (412).
func IsStale(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusPreconditionFailed
}

// request is one request to the daemon.
type request struct {
	method, path string
	contentType  string
	body         io.Reader
	ifRevision   uint64 // sent as If-Match when not 0
	out          any    // the answer's JSON is decoded into it when not nil
}

// do sends req and returns the revision the answer's ETag names (0 when
// it has none).
func (c *Client) do(ctx context.Context, req request) (uint64, error) {
	hreq, err := http.NewRequestWithContext(ctx, req.method, "http://xlb"+req.path, req.body)
	if err != nil {
		return 0, err
	}
	if req.contentType != "" {
		hreq.Header.Set("Content-Type", req.contentType)
	}
	if req.ifRevision != 0 {
		hreq.Header.Set("If-Match", ETag(req.ifRevision))
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return 0, fmt.Errorf("daemon at %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("read daemon answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e Error
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("daemon answered %s", resp.Status)
		}
		return 0, &StatusError{Status: resp.StatusCode, Message: e.Error, Revision: e.Revision}
	}
	rev, _ := strconv.ParseUint(strings.Trim(resp.Header.Get("ETag"), `"`), 10, 64)
	if req.out == nil {
		return rev, nil
	}
	if err := json.Unmarshal(data, req.out); err != nil {
		return 0, fmt.Errorf("decode daemon answer: %w", err)
	}
	return rev, nil
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
	_, err := c.do(ctx, request{method: method, path: path, contentType: "application/json", body: body, out: out})
	return err
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
	cfg, _, err := c.ConfigRevision(ctx)
	return cfg, err
}

// ConfigRevision returns the configuration in force and its revision,
// for ApplyIf.
func (c *Client) ConfigRevision(ctx context.Context) (*config.Config, uint64, error) {
	var cfg config.Config
	rev, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/config", out: &cfg})
	return &cfg, rev, err
}

// Apply applies a whole configuration file's contents, whatever the
// configuration in force is (last writer wins).
func (c *Client) Apply(ctx context.Context, doc []byte) (ApplyResult, error) {
	return c.ApplyIf(ctx, doc, 0)
}

// ApplyIf applies a whole configuration file's contents if the
// configuration in force is still at revision rev (0: whatever it is);
// else the daemon changes nothing and the error is IsStale.
func (c *Client) ApplyIf(ctx context.Context, doc []byte, rev uint64) (ApplyResult, error) {
	var res ApplyResult
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/apply", contentType: "application/yaml",
		body: bytes.NewReader(doc), ifRevision: rev, out: &res})
	return res, err
}

// EditAttempts bounds how many times Edit reads, edits and writes the
// configuration when others keep changing it in between.
const EditAttempts = 10

// Edit reads the configuration in force, applies edit to it and applies
// the result if nobody changed the configuration in between (If-Match).
// When someone did, it reads again and redoes the edit, up to
// EditAttempts times: edit must work from the configuration it is
// given, each time a fresh copy. A change made by someone else is never
// lost; an error from edit is returned as is, and nothing is changed.
func (c *Client) Edit(ctx context.Context, edit func(*config.Config) error) (ApplyResult, error) {
	var stale error
	for range EditAttempts {
		cfg, rev, err := c.ConfigRevision(ctx)
		if err != nil {
			return ApplyResult{}, err
		}
		if err := edit(cfg); err != nil {
			return ApplyResult{}, err
		}
		doc, err := yaml.Marshal(cfg)
		if err != nil {
			return ApplyResult{}, fmt.Errorf("encode configuration: %w", err)
		}
		res, err := c.ApplyIf(ctx, doc, rev)
		if !IsStale(err) {
			return res, err
		}
		stale = err
	}
	return ApplyResult{}, fmt.Errorf("the configuration changed under each of %d attempts to edit it, nothing changed: %w", EditAttempts, stale)
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

// Status returns the daemon's status (xlb status).
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.send(ctx, http.MethodGet, "/v1/status", nil, &st)
}

// FollowDrops calls fn for every drop the daemon streams until ctx ends,
// the daemon ends the stream (count or seconds reached), or fn returns
// false. query may hold reason, count and seconds.
func (c *Client) FollowDrops(ctx context.Context, query url.Values, fn func(Drop) bool) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://xlb/v1/drops/follow?"+query.Encode(), nil)
	if err != nil {
		return err
	}
	stream := *c.http
	stream.Timeout = 0 // a stream lasts as long as it is followed
	resp, err := stream.Do(hreq)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		var e Error
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("daemon answered %s", resp.Status)
		}
		return &StatusError{Status: resp.StatusCode, Message: e.Error}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var d Drop
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read drops: %w", err)
		}
		if !fn(d) {
			return nil
		}
	}
}
