// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
)

// Request is one change of xlb's API: a method, a path and a JSON body
// (nil for none).
type Request struct {
	Method string
	Path   string
	Body   any
}

// servicePath is the API path of the command's service.
func (c *Command) servicePath() string {
	return api.ServicePath(c.Service.Proto, c.Service.Addr.Addr().String(), int(c.Service.Addr.Port()))
}

// realPath is the API path of the command's real server.
func (c *Command) realPath() string {
	return fmt.Sprintf("%s/reals/%s/%d", c.servicePath(), c.Real.Addr(), c.Real.Port())
}

// serviceConfig is the service -A adds.
func (c *Command) serviceConfig() config.Service {
	s := config.Service{VIP: c.Service.Addr.Addr().String(), Port: int(c.Service.Addr.Port()),
		Protocol: c.Service.Proto, Scheduler: c.Scheduler, Mode: "fullnat",
		Persistent: c.Persistent, Netmask: c.Netmask}
	if c.LocalIP != "" {
		s.LocalIPs = []string{c.LocalIP}
	}
	return s
}

// serviceEdit is what -E sets. As ipvsadm's -E, it sets the scheduler,
// the persistence and its netmask all at once: what the line leaves out
// goes back to the default (wlc, no persistence, the whole address).
func (c *Command) serviceEdit() map[string]any {
	return map[string]any{"scheduler": c.Scheduler, "persistent": c.Persistent, "netmask": c.Netmask}
}

// Request returns the one API request a command that changes one service,
// real or local address makes (-A, -E, -D, -a, -e, -d, -P, -Q). The other
// commands are not one request: it returns an error for them.
func (c *Command) Request() (Request, error) {
	switch c.Kind {
	case AddService:
		return Request{http.MethodPost, "/v1/services", c.serviceConfig()}, nil
	case EditService:
		return Request{http.MethodPut, c.servicePath(), c.serviceEdit()}, nil
	case DeleteService:
		return Request{http.MethodDelete, c.servicePath(), nil}, nil
	case AddReal:
		w := c.Weight
		return Request{http.MethodPost, c.servicePath() + "/reals",
			config.Real{Address: c.Real.Addr().String(), Port: int(c.Real.Port()), Weight: &w}}, nil
	case EditReal:
		return Request{http.MethodPut, c.realPath(), api.Weight(c.Weight)}, nil
	case DeleteReal:
		return Request{http.MethodDelete, c.realPath(), nil}, nil
	case AddLaddr:
		return Request{http.MethodPost, c.servicePath() + "/laddrs", api.LocalIP{Address: c.LocalIP}}, nil
	case DelLaddr:
		return Request{http.MethodDelete, c.servicePath() + "/laddrs/" + c.LocalIP, nil}, nil
	}
	return Request{}, fmt.Errorf("ipvsadm %s is not one API request", c.Kind)
}

// findService returns the index of the command's service in cfg, or -1.
func (c *Command) findService(cfg *config.Config) int {
	return slices.IndexFunc(cfg.Services, func(s config.Service) bool {
		return strings.EqualFold(s.Protocol, c.Service.Proto) && s.Port == int(c.Service.Addr.Port()) &&
			config.SameAddr(s.VIP, c.Service.Addr.Addr().String())
	})
}

// findReal returns the index of the command's real in svc, or -1.
func (c *Command) findReal(svc config.Service) int {
	return slices.IndexFunc(svc.Reals, func(r config.Real) bool {
		return r.Port == int(c.Real.Port()) && config.SameAddr(r.Address, c.Real.Addr().String())
	})
}

// ApplyTo makes the command's change to cfg, as the daemon would make it
// (the same refusals of what exists or is missing); the daemon validates
// the result when it is applied. It is how -R, -C and --set change the
// configuration in one apply. Commands that change nothing in the
// configuration (listings, -Z) return an error.
func (c *Command) ApplyTo(cfg *config.Config) error {
	switch c.Kind {
	case Clear:
		cfg.Services = nil
		return nil
	case SetTimeouts:
		c.Timeouts.applyTo(cfg)
		return nil
	case AddService:
		if c.findService(cfg) >= 0 {
			return fmt.Errorf("service %s exists", c.Service)
		}
		cfg.Services = append(cfg.Services, c.serviceConfig())
		return nil
	case EditService, DeleteService, AddReal, EditReal, DeleteReal, AddLaddr, DelLaddr:
	default:
		return fmt.Errorf("ipvsadm %s changes no configuration", c.Kind)
	}
	i := c.findService(cfg)
	if i < 0 {
		return fmt.Errorf("no service %s", c.Service)
	}
	svc := &cfg.Services[i]
	switch c.Kind {
	case EditService:
		svc.Scheduler, svc.Persistent, svc.Netmask = c.Scheduler, c.Persistent, c.Netmask
	case DeleteService:
		cfg.Services = slices.Delete(cfg.Services, i, i+1)
	case AddReal:
		if c.findReal(*svc) >= 0 {
			return fmt.Errorf("real %s exists in service %s", c.Real, c.Service)
		}
		w := c.Weight
		svc.Reals = append(svc.Reals, config.Real{Address: c.Real.Addr().String(), Port: int(c.Real.Port()), Weight: &w})
	case EditReal, DeleteReal:
		j := c.findReal(*svc)
		if j < 0 {
			return fmt.Errorf("no real %s in service %s", c.Real, c.Service)
		}
		if c.Kind == DeleteReal {
			svc.Reals = slices.Delete(svc.Reals, j, j+1)
			break
		}
		w := c.Weight
		svc.Reals[j].Weight = &w
	case AddLaddr, DelLaddr:
		j := slices.IndexFunc(svc.LocalIPs, func(l string) bool { return config.SameAddr(l, c.LocalIP) })
		switch {
		case c.Kind == AddLaddr && j >= 0:
			return fmt.Errorf("local address %s exists in service %s", c.LocalIP, c.Service)
		case c.Kind == AddLaddr:
			svc.LocalIPs = append(svc.LocalIPs, c.LocalIP)
		case j < 0:
			return fmt.Errorf("no local address %s in service %s", c.LocalIP, c.Service)
		default:
			svc.LocalIPs = slices.Delete(svc.LocalIPs, j, j+1)
		}
	}
	return nil
}

// applyTo sets the timeouts that are not 0 in cfg (--set's 0 leaves one
// unchanged, as ipvsadm's).
func (t Timeouts) applyTo(cfg *config.Config) {
	cur := config.Timeouts{}
	if cfg.Timeouts != nil {
		cur = *cfg.Timeouts
	}
	for _, f := range []struct{ set, dst *int }{{&t.TCP, &cur.TCP}, {&t.TCPFin, &cur.TCPFin}, {&t.UDP, &cur.UDP}} {
		if *f.set != 0 {
			*f.dst = *f.set
		}
	}
	if cur != (config.Timeouts{}) {
		cfg.Timeouts = &cur
	}
}

// RestoreLine is one command of a -R input and the line it is on.
type RestoreLine struct {
	Line int
	Cmd  *Command
}

// restorable are the commands -R takes: those that change the
// configuration.
var restorable = []Kind{AddService, EditService, DeleteService, Clear, AddReal, EditReal, DeleteReal,
	SetTimeouts, AddLaddr, DelLaddr}

// ParseRestore reads -R's input: one ipvsadm command line a line, as -S
// prints them; a leading "ipvsadm" is skipped, and so are blank lines and
// lines starting with #. Every line is parsed before anything is
// applied; errors name the line.
func ParseRestore(r io.Reader) ([]RestoreLine, error) {
	var out []RestoreLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && (fields[0] == "ipvsadm" || strings.HasSuffix(fields[0], "/ipvsadm")) {
			fields = fields[1:]
		}
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		c, err := Parse(fields)
		if err != nil {
			return nil, usagef("line %d: %v", n, err)
		}
		if !slices.Contains(restorable, c.Kind) {
			return nil, usagef("line %d: -R restores changes; ipvsadm %s is not one", n, c.Kind)
		}
		out = append(out, RestoreLine{Line: n, Cmd: c})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	return out, nil
}

// RestoreTo applies the lines to cfg in order; on error cfg is half
// changed and must be dropped.
func RestoreTo(cfg *config.Config, lines []RestoreLine) error {
	for _, l := range lines {
		if err := l.Cmd.ApplyTo(cfg); err != nil {
			return fmt.Errorf("line %d: %w", l.Line, err)
		}
	}
	return nil
}

// CurrentTimeouts are the timeouts in force under cfg: its own, or the
// data path's defaults (IPVS's 900 120 300).
func CurrentTimeouts(cfg *config.Config) Timeouts {
	s := cfg.TimeoutSettings()
	return Timeouts{TCP: int(s.TCPTimeout / time.Second), TCPFin: int(s.TCPFinTimeout / time.Second), UDP: int(s.UDPTimeout / time.Second)}
}
