// SPDX-License-Identifier: Apache-2.0

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// maxBody bounds request bodies (a configuration file included).
const maxBody = 4 << 20

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
	var he httpError
	var ve *config.ValidationError
	switch {
	case errors.As(err, &he):
		status = he.status
	case errors.As(err, &ve):
		status = http.StatusBadRequest
	}
	s.log.Info("api request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	writeJSON(w, status, Error{Error: err.Error()})
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

func (s *server) getVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Version{Version: s.version})
}

func (s *server) getConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.b.Config())
}

// applyConfig applies cfg and answers with what changed.
func (s *server) applyConfig(w http.ResponseWriter, r *http.Request, cfg *config.Config) {
	changes, err := s.b.Apply(cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res := ApplyResult{Changed: !changes.Empty(), Changes: changeLines(changes)}
	writeJSON(w, http.StatusOK, res)
}

func (s *server) apply(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		s.fail(w, r, badRequest("read configuration: %v", err))
		return
	}
	cfg, err := config.Parse(body)
	if err != nil {
		s.fail(w, r, badRequest("%v", err))
		return
	}
	s.applyConfig(w, r, cfg)
}

// serviceIndex finds the service the path names in cfg.
func serviceIndex(r *http.Request, cfg *config.Config) (int, error) {
	proto, err := datapath.ParseProto(r.PathValue("proto"))
	if err != nil {
		return 0, badRequest("%v", err)
	}
	vip, err := netip.ParseAddr(r.PathValue("vip"))
	if err != nil {
		return 0, badRequest("vip %q is not an IP address", r.PathValue("vip"))
	}
	port, err := strconv.ParseUint(r.PathValue("port"), 10, 16)
	if err != nil {
		return 0, badRequest("port %q is not a port number", r.PathValue("port"))
	}
	for i, svc := range cfg.Services {
		p, _ := datapath.ParseProto(svc.Protocol)
		a, _ := netip.ParseAddr(svc.VIP)
		if p == proto && a == vip && svc.Port == int(port) {
			return i, nil
		}
	}
	return 0, notFound("no service %s %s", proto, netip.AddrPortFrom(vip, uint16(port)))
}

func (s *server) addService(w http.ResponseWriter, r *http.Request) {
	var svc config.Service
	if err := decode(r, &svc); err != nil {
		s.fail(w, r, err)
		return
	}
	cfg := s.b.Config()
	for _, o := range cfg.Services {
		if o.VIP == svc.VIP && o.Port == svc.Port && o.Protocol == svc.Protocol {
			s.fail(w, r, conflict("service %s %s:%d exists", svc.Protocol, svc.VIP, svc.Port))
			return
		}
	}
	cfg.Services = append(cfg.Services, svc)
	s.applyConfig(w, r, cfg)
}

// editService replaces a service's settings; its reals stay unless the
// body lists some.
func (s *server) editService(w http.ResponseWriter, r *http.Request) {
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	svc := cfg.Services[i]
	if err := decode(r, &svc); err != nil {
		s.fail(w, r, err)
		return
	}
	cfg.Services[i] = svc
	s.applyConfig(w, r, cfg)
}

func (s *server) delService(w http.ResponseWriter, r *http.Request) {
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cfg.Services = slices.Delete(cfg.Services, i, i+1)
	s.applyConfig(w, r, cfg)
}

// realIndex finds the real the path names in service i.
func realIndex(r *http.Request, svc config.Service) (int, error) {
	addr, err := netip.ParseAddr(r.PathValue("addr"))
	if err != nil {
		return 0, badRequest("real %q is not an IP address", r.PathValue("addr"))
	}
	port, err := strconv.ParseUint(r.PathValue("rport"), 10, 16)
	if err != nil {
		return 0, badRequest("real port %q is not a port number", r.PathValue("rport"))
	}
	for j, real := range svc.Reals {
		if a, _ := netip.ParseAddr(real.Address); a == addr && real.Port == int(port) {
			return j, nil
		}
	}
	return 0, notFound("no real %s in the service", netip.AddrPortFrom(addr, uint16(port)))
}

func (s *server) addReal(w http.ResponseWriter, r *http.Request) {
	var real config.Real
	if err := decode(r, &real); err != nil {
		s.fail(w, r, err)
		return
	}
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, o := range cfg.Services[i].Reals {
		if o.Address == real.Address && o.Port == real.Port {
			s.fail(w, r, conflict("real %s:%d exists", real.Address, real.Port))
			return
		}
	}
	cfg.Services[i].Reals = append(cfg.Services[i].Reals, real)
	s.applyConfig(w, r, cfg)
}

// WeightChange is the body of a real's edit.
type WeightChange struct {
	Weight int `json:"weight"`
}

func (s *server) editReal(w http.ResponseWriter, r *http.Request) {
	var change WeightChange
	if err := decode(r, &change); err != nil {
		s.fail(w, r, err)
		return
	}
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err == nil {
		var j int
		if j, err = realIndex(r, cfg.Services[i]); err == nil {
			cfg.Services[i].Reals[j].Weight = &change.Weight
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applyConfig(w, r, cfg)
}

func (s *server) delReal(w http.ResponseWriter, r *http.Request) {
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err == nil {
		var j int
		if j, err = realIndex(r, cfg.Services[i]); err == nil {
			cfg.Services[i].Reals = slices.Delete(cfg.Services[i].Reals, j, j+1)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applyConfig(w, r, cfg)
}

// LocalIP is the body that adds a local IP.
type LocalIP struct {
	Address string `json:"address"`
}

func (s *server) addLaddr(w http.ResponseWriter, r *http.Request) {
	var l LocalIP
	if err := decode(r, &l); err != nil {
		s.fail(w, r, err)
		return
	}
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if slices.Contains(cfg.Services[i].LocalIPs, l.Address) {
		s.fail(w, r, conflict("local IP %s exists", l.Address))
		return
	}
	cfg.Services[i].LocalIPs = append(cfg.Services[i].LocalIPs, l.Address)
	s.applyConfig(w, r, cfg)
}

func (s *server) delLaddr(w http.ResponseWriter, r *http.Request) {
	cfg := s.b.Config()
	i, err := serviceIndex(r, cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	addr, err := netip.ParseAddr(r.PathValue("addr"))
	j := slices.IndexFunc(cfg.Services[i].LocalIPs, func(s string) bool { a, _ := netip.ParseAddr(s); return a == addr })
	if err != nil || j < 0 {
		s.fail(w, r, notFound("no local IP %q in the service", r.PathValue("addr")))
		return
	}
	cfg.Services[i].LocalIPs = slices.Delete(cfg.Services[i].LocalIPs, j, j+1)
	s.applyConfig(w, r, cfg)
}

func (s *server) listServices(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Status()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	names := map[string]string{}
	for _, svc := range s.b.Config().Services {
		names[fmt.Sprintf("%s/%s/%d", svc.Protocol, svc.VIP, svc.Port)] = svc.Name
	}
	out := make([]Service, 0, len(st))
	for _, ss := range st {
		svc := Service{VIP: ss.Key.VIP.String(), Port: ss.Key.Port, Protocol: ss.Key.Proto.String(),
			Scheduler: ss.Scheduler.String(), Mode: "fullnat", Stats: countersOf(ss.Stats), Reals: []Real{}}
		svc.Name = names[fmt.Sprintf("%s/%s/%d", svc.Protocol, svc.VIP, svc.Port)]
		for _, l := range ss.LocalIPs {
			svc.LocalIPs = append(svc.LocalIPs, l.String())
		}
		for _, rs := range ss.Reals {
			svc.Reals = append(svc.Reals, Real{Address: rs.Addr.String(), Port: rs.Port, Weight: rs.Weight,
				ActiveConns: rs.ActiveConns, InactiveConns: rs.InactiveConns, Stats: countersOf(rs.Stats)})
		}
		out = append(out, svc)
	}
	writeJSON(w, http.StatusOK, out)
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
	err := s.b.Conns(func(c datapath.ConnEntry) bool {
		if want.IsValid() && (c.Reverse || c.To.Addr() != want) {
			return true // a filter shows the forward entries of one VIP
		}
		out = append(out, Conn{Protocol: c.Proto.String(), From: c.From.String(), To: c.To.String(), Peer: c.Peer.String(),
			Reverse: c.Reverse, State: c.State.String(), IdleSecs: c.Idle.Seconds()})
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
