// SPDX-License-Identifier: Apache-2.0

package listing

import (
	"fmt"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// FromAPI turns the daemon API's services back into the listing's input.
func FromAPI(svcs []api.Service) ([]loadbalancer.ServiceStatus, error) {
	out := make([]loadbalancer.ServiceStatus, 0, len(svcs))
	for _, s := range svcs {
		vip, err := netip.ParseAddr(s.VIP)
		if err != nil {
			return nil, fmt.Errorf("daemon sent vip %q: %w", s.VIP, err)
		}
		proto, err := loadbalancer.ParseProto(s.Protocol)
		if err != nil {
			return nil, err
		}
		sched, err := loadbalancer.ParseScheduler(s.Scheduler)
		if err != nil {
			return nil, err
		}
		st := loadbalancer.ServiceStatus{
			Service: loadbalancer.Service{Key: loadbalancer.ServiceKey{VIP: vip, Port: s.Port, Proto: proto}, Scheduler: sched,
				Persistent: uint32(max(s.Persistent, 0))},
			Stats: fromAPICounters(s.Stats),
		}
		if s.Netmask != "" {
			bits, err := config.ParseNetmask(s.Netmask, vip.Is4())
			if err != nil {
				return nil, fmt.Errorf("daemon sent netmask %q: %w", s.Netmask, err)
			}
			st.PersistPrefix = uint8(bits)
		}
		for _, r := range s.Reals {
			addr, err := netip.ParseAddr(r.Address)
			if err != nil {
				return nil, fmt.Errorf("daemon sent real %q: %w", r.Address, err)
			}
			st.Reals = append(st.Reals, loadbalancer.RealStatus{
				Real:  loadbalancer.Real{Addr: addr, Port: r.Port, Weight: r.Weight},
				Stats: fromAPICounters(r.Stats), ActiveConns: r.ActiveConns, InactiveConns: r.InactiveConns,
				Health: r.Health, HealthReason: r.HealthReason, Down: r.Health == "down",
			})
		}
		out = append(out, st)
	}
	return out, nil
}

func fromAPICounters(c api.Counters) loadbalancer.Counters {
	return loadbalancer.Counters{Conns: c.Conns, InPackets: c.InPackets, OutPackets: c.OutPackets, InBytes: c.InBytes, OutBytes: c.OutBytes}
}
