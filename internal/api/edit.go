// SPDX-License-Identifier: Apache-2.0

package api

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The edit handlers (services, reals, local IPs) each change the
// configuration in force through Backend.Update, so that concurrent
// requests never lose each other's changes, and answer like an apply.

// WeightChange is the body of a real's edit: a weight left out (or
// null) keeps the real's weight.
type WeightChange struct {
	Weight *int `json:"weight,omitempty"`
}

// Weight returns a WeightChange that sets weight w.
func Weight(w int) WeightChange { return WeightChange{Weight: &w} }

// LocalIP is the body that adds a local IP.
type LocalIP struct {
	Address string `json:"address"`
}

// update decodes the body into in (when not nil), then applies edit to a
// copy of the configuration in force, if the If-Match revision (when
// given) is still in force, and answers with what changed.
func (s *server) update(w http.ResponseWriter, r *http.Request, in any, edit func(cfg *config.Config) error) {
	rev, err := ifMatch(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if in != nil {
		if err := decode(w, r, in); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	changes, now, err := s.b.Update(rev, edit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applied(w, changes, now)
}

// updateService is update for a change to the service the path names:
// edit gets the configuration and the service's index in it.
func (s *server) updateService(w http.ResponseWriter, r *http.Request, in any, edit func(cfg *config.Config, i int) error) {
	s.update(w, r, in, func(cfg *config.Config) error {
		i, err := serviceIndex(r, cfg)
		if err != nil {
			return err
		}
		return edit(cfg, i)
	})
}

// serviceIndex finds the service the path names in cfg.
func serviceIndex(r *http.Request, cfg *config.Config) (int, error) {
	proto, err := loadbalancer.ParseProto(r.PathValue("proto"))
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
		p, _ := loadbalancer.ParseProto(svc.Protocol)
		a, _ := netip.ParseAddr(svc.VIP)
		if p == proto && a == vip && svc.Port == int(port) {
			return i, nil
		}
	}
	return 0, notFound("no service %s %s", proto, netip.AddrPortFrom(vip, uint16(port)))
}

// realIndex finds the real the path names in svc.
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

func (s *server) addService(w http.ResponseWriter, r *http.Request) {
	var svc config.Service
	s.update(w, r, &svc, func(cfg *config.Config) error {
		for _, o := range cfg.Services {
			if config.SameAddr(o.VIP, svc.VIP) && o.Port == svc.Port && o.Protocol == svc.Protocol {
				return conflict("service %s %s:%d exists", svc.Protocol, svc.VIP, svc.Port)
			}
		}
		cfg.Services = append(cfg.Services, svc)
		return nil
	})
}

// editService sets the fields the body names in the service, each
// replaced whole (a health_check, the list of reals); the others stay.
func (s *server) editService(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	s.updateService(w, r, &body, func(cfg *config.Config, i int) error {
		return mergeService(&cfg.Services[i], body)
	})
}

// mergeService sets in svc the fields the JSON object body names, with
// their values in body (null: the default). A field is replaced whole,
// never merged with the value it had: decoding into the service itself
// would keep, in a reals list given anew, the weights of the reals that
// were there before at the same positions.
func mergeService(svc *config.Service, body []byte) error {
	var named map[string]json.RawMessage
	if err := json.Unmarshal(body, &named); err != nil {
		return badRequest("request body: want a JSON object of service fields: %v", err)
	}
	var given config.Service
	if err := decodeJSON(body, &given); err != nil {
		return err
	}
	dst, src := reflect.ValueOf(svc).Elem(), reflect.ValueOf(&given).Elem()
	for i := range dst.NumField() {
		field, _, _ := strings.Cut(dst.Type().Field(i).Tag.Get("json"), ",")
		for key := range named {
			if strings.EqualFold(key, field) { // as encoding/json matches keys
				dst.Field(i).Set(src.Field(i))
			}
		}
	}
	return nil
}

func (s *server) delService(w http.ResponseWriter, r *http.Request) {
	s.updateService(w, r, nil, func(cfg *config.Config, i int) error {
		cfg.Services = slices.Delete(cfg.Services, i, i+1)
		return nil
	})
}

func (s *server) addReal(w http.ResponseWriter, r *http.Request) {
	var real config.Real
	s.updateService(w, r, &real, func(cfg *config.Config, i int) error {
		for _, o := range cfg.Services[i].Reals {
			if config.SameAddr(o.Address, real.Address) && o.Port == real.Port {
				return conflict("real %s:%d exists", real.Address, real.Port)
			}
		}
		cfg.Services[i].Reals = append(cfg.Services[i].Reals, real)
		return nil
	})
}

// editReal sets the real's weight when the body gives one: a body
// without it ({}) changes nothing.
func (s *server) editReal(w http.ResponseWriter, r *http.Request) {
	var change WeightChange
	s.updateService(w, r, &change, func(cfg *config.Config, i int) error {
		j, err := realIndex(r, cfg.Services[i])
		if err != nil {
			return err
		}
		if change.Weight != nil {
			cfg.Services[i].Reals[j].Weight = change.Weight
		}
		return nil
	})
}

func (s *server) delReal(w http.ResponseWriter, r *http.Request) {
	s.updateService(w, r, nil, func(cfg *config.Config, i int) error {
		j, err := realIndex(r, cfg.Services[i])
		if err != nil {
			return err
		}
		cfg.Services[i].Reals = slices.Delete(cfg.Services[i].Reals, j, j+1)
		return nil
	})
}

func (s *server) addLaddr(w http.ResponseWriter, r *http.Request) {
	var l LocalIP
	s.updateService(w, r, &l, func(cfg *config.Config, i int) error {
		if slices.ContainsFunc(cfg.Services[i].LocalIPs, func(o string) bool { return config.SameAddr(o, l.Address) }) {
			return conflict("local IP %s exists", l.Address)
		}
		cfg.Services[i].LocalIPs = append(cfg.Services[i].LocalIPs, l.Address)
		return nil
	})
}

func (s *server) delLaddr(w http.ResponseWriter, r *http.Request) {
	s.updateService(w, r, nil, func(cfg *config.Config, i int) error {
		j := slices.IndexFunc(cfg.Services[i].LocalIPs, func(o string) bool { return config.SameAddr(o, r.PathValue("addr")) })
		if j < 0 {
			return notFound("no local IP %q in the service", r.PathValue("addr"))
		}
		cfg.Services[i].LocalIPs = slices.Delete(cfg.Services[i].LocalIPs, j, j+1)
		return nil
	})
}
