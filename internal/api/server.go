// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// MaxBody bounds request bodies (a configuration file included): a
// longer body is refused whole with 413, never cut and parsed.
const MaxBody = 4 << 20

// Handler returns the API's routes over b; version is reported by
// /v1/version.
func Handler(b Backend, version string, log *slog.Logger) http.Handler {
	s := &server{b: b, version: version, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})
	mux.HandleFunc("GET /v1/version", s.getVersion)
	mux.HandleFunc("GET /v1/status", s.getStatus)
	mux.HandleFunc("GET /v1/config", s.getConfig)
	mux.HandleFunc("POST /v1/apply", s.apply)
	mux.HandleFunc("GET /v1/services", s.listServices)
	mux.HandleFunc("POST /v1/services", s.addService)
	mux.HandleFunc("PUT /v1/services/{proto}/{vip}/{port}", s.editService)
	mux.HandleFunc("DELETE /v1/services/{proto}/{vip}/{port}", s.delService)
	mux.HandleFunc("POST /v1/services/{proto}/{vip}/{port}/reals", s.addReal)
	mux.HandleFunc("PUT /v1/services/{proto}/{vip}/{port}/reals/{addr}/{rport}", s.editReal)
	mux.HandleFunc("DELETE /v1/services/{proto}/{vip}/{port}/reals/{addr}/{rport}", s.delReal)
	mux.HandleFunc("POST /v1/services/{proto}/{vip}/{port}/laddrs", s.addLaddr)
	mux.HandleFunc("DELETE /v1/services/{proto}/{vip}/{port}/laddrs/{addr}", s.delLaddr)
	mux.HandleFunc("GET /v1/conns", s.listConns)
	mux.HandleFunc("GET /v1/stats", s.getStats)
	mux.HandleFunc("GET /v1/drops/follow", s.followDrops)
	mux.HandleFunc("POST /v1/stats/zero", s.zeroCounters)
	mux.HandleFunc("GET /v1/node", s.getNode)
	mux.HandleFunc("POST /v1/node/drain", s.drainNode)
	return mux
}

type server struct {
	b       Backend
	version string
	log     *slog.Logger
}

// httpError carries the status an error answers with.
type httpError struct {
	status int
	err    error
}

func (e httpError) Error() string { return e.err.Error() }
func (e httpError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return httpError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

func notFound(format string, args ...any) error {
	return httpError{http.StatusNotFound, fmt.Errorf(format, args...)}
}

func conflict(format string, args ...any) error {
	return httpError{http.StatusConflict, fmt.Errorf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	body := Error{Error: err.Error()}
	var he httpError
	var ve *config.ValidationError
	var stale *StaleError
	switch {
	case errors.As(err, &stale):
		status, body.Revision = http.StatusPreconditionFailed, stale.Current
		w.Header().Set("ETag", ETag(stale.Current))
	case errors.As(err, &he):
		status = he.status
	case errors.As(err, &ve):
		status = http.StatusBadRequest
	case errors.Is(err, loadbalancer.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrNoSpeaker):
		status = http.StatusConflict
	}
	s.log.Info("api request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	writeJSON(w, status, body)
}

// readBody reads the whole request body. One longer than MaxBody is an
// error that answers 413: a body cut at the limit could still parse
// (port 8080 read as 8) and an apply of it would remove what followed.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, httpError{http.StatusRequestEntityTooLarge,
			fmt.Errorf("request body: larger than the limit of %d bytes (%d MiB); nothing changed", tooLarge.Limit, tooLarge.Limit>>20)}
	case err != nil:
		return nil, badRequest("read request body: %v", err)
	}
	return body, nil
}

// decode reads the request body as one JSON value into v: an unknown
// field, or anything after the value, is an error.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

// decodeJSON decodes data, one JSON value and nothing else, into v.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: more data after the JSON value")
	}
	return nil
}

func (s *server) getVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Version{Version: s.version})
}

func (s *server) getConfig(w http.ResponseWriter, _ *http.Request) {
	cfg, rev := s.b.ConfigRevision()
	w.Header().Set("ETag", ETag(rev))
	writeJSON(w, http.StatusOK, cfg)
}

// applied answers a write the backend made: what changed, and the
// revision in force as the ETag.
func (s *server) applied(w http.ResponseWriter, changes config.Changes, rev uint64) {
	w.Header().Set("ETag", ETag(rev))
	writeJSON(w, http.StatusOK, ApplyResult{Changed: !changes.Empty(), Changes: changeLines(changes), Warnings: changes.Warnings, Revision: rev})
}

// apply applies a whole configuration file (YAML) if the If-Match
// revision, when there is one, is still in force.
func (s *server) apply(w http.ResponseWriter, r *http.Request) {
	rev, err := ifMatch(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cfg, err := config.Parse(body)
	if err != nil {
		s.fail(w, r, badRequest("%v", err))
		return
	}
	changes, now, err := s.b.Apply(cfg, rev)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applied(w, changes, now)
}

func (s *server) listServices(w http.ResponseWriter, r *http.Request) {
	out, err := s.services()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// services are the backend's services as the API shows them, with the
// names the configuration gives them.
func (s *server) services() ([]Service, error) {
	st, err := s.b.Status()
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	cfg, _ := s.b.ConfigRevision()
	for _, svc := range cfg.Services {
		names[fmt.Sprintf("%s/%s/%d", svc.Protocol, svc.VIP, svc.Port)] = svc.Name
	}
	out := make([]Service, 0, len(st))
	for _, ss := range st {
		svc := Service{VIP: ss.Key.VIP, Port: ss.Key.Port, Protocol: ss.Key.Proto,
			Scheduler: ss.Scheduler, Mode: "fullnat", Stats: countersOf(ss.Stats), NoLport: ss.NoLport, Reals: []Real{},
			Persistent: int(ss.Persistent), Netmask: config.FormatNetmask(ss.Key.VIP, int(ss.PersistPrefix))}
		svc.Name = names[fmt.Sprintf("%s/%s/%d", svc.Protocol, svc.VIP, svc.Port)]
		if ss.ClientAddress != loadbalancer.ClientAddressNone {
			svc.ClientAddress = ss.ClientAddress.String()
		}
		svc.SynProxy = ss.SynProxy
		svc.LocalIPs = append(svc.LocalIPs, ss.LocalIPs...)
		for _, rs := range ss.Reals {
			r := Real{Address: rs.Addr, Port: rs.Port, Weight: rs.Weight,
				Health: rs.Health, HealthReason: rs.HealthReason,
				ActiveConns: rs.ActiveConns, InactiveConns: rs.InactiveConns, Stats: countersOf(rs.Stats)}
			if rs.Unresolved {
				r.NextHop, r.NextHopReason = NextHopUnresolved, rs.NextHopReason
			}
			svc.Reals = append(svc.Reals, r)
		}
		out = append(out, svc)
	}
	return out, nil
}

// maxConns bounds one connection listing.
const maxConns = 100000

func (s *server) listConns(w http.ResponseWriter, r *http.Request) {
	var want netip.Addr
	if v := r.URL.Query().Get("vip"); v != "" {
		a, err := netip.ParseAddr(v)
		if err != nil {
			s.fail(w, r, badRequest("vip %q is not an IP address", v))
			return
		}
		want = a
	}
	out := []Conn{}
	err := s.b.Conns(func(c loadbalancer.ConnEntry) bool {
		if want.IsValid() && (c.Reverse || c.To.Addr() != want) {
			return true // a filter shows the forward entries of one VIP
		}
		conn := Conn{Protocol: c.Proto, From: c.From, To: c.To, Peer: c.Peer,
			Reverse: c.Reverse, State: c.State, IdleSecs: c.Idle.Seconds(), TimeoutSecs: c.Timeout.Seconds()}
		if c.ClientAddress != loadbalancer.ClientAddressNone {
			conn.ClientAddress = c.ClientAddress.String()
		}
		conn.SynProxy = c.SynProxy
		out = append(out, conn)
		return len(out) < maxConns
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Stats()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func changeLines(c config.Changes) []string {
	out := []string{}
	for _, line := range strings.Split(c.String(), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}
