// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Settings returns the settings in force.
func (d *Datapath) Settings() loadbalancer.Settings {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settings
}

// SetSettings validates and applies new settings.
func (d *Datapath) SetSettings(s loadbalancer.Settings) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.writeSettings(s); err != nil {
		return err
	}
	d.settings = s
	return nil
}

func (d *Datapath) writeSettings(s loadbalancer.Settings) error {
	if s.LocalPortMin == 0 || s.LocalPortMax < s.LocalPortMin {
		return fmt.Errorf("local port range %d-%d: want 1 <= min <= max", s.LocalPortMin, s.LocalPortMax)
	}
	if span := int(s.LocalPortMax) - int(s.LocalPortMin) + 1; span < d.cpus {
		return fmt.Errorf("local port range %d-%d: %d ports cannot be split over %d CPUs", s.LocalPortMin, s.LocalPortMax, span, d.cpus)
	}
	var cfg xlbXlbConfig
	for _, t := range []time.Duration{s.TCPSynTimeout, s.TCPTimeout, s.TCPFinTimeout, s.TCPRstTimeout, s.UDPTimeout} {
		if t < time.Second || t > loadbalancer.MaxTimeout || t%time.Second != 0 {
			return fmt.Errorf("timeout %v: want whole seconds from 1s to %v", t, loadbalancer.MaxTimeout)
		}
	}
	cfg.LportMin = s.LocalPortMin
	cfg.LportMax = s.LocalPortMax
	cfg.Ncpus = uint32(d.cpus)
	if s.FIBCacheTTL < 0 || s.FIBCacheTTL > time.Hour || s.FIBCacheTTL%time.Second != 0 {
		return fmt.Errorf("fib cache ttl %v: want whole seconds from 0 to 1h", s.FIBCacheTTL)
	}
	cfg.FibCacheTtl = uint32(s.FIBCacheTTL / time.Second)
	cfg.Ct4Slots, cfg.Ct6Slots = d.ct[0].homes, d.ct[1].homes
	if err := d.objs.XlbCfg.Set(cfg); err != nil {
		return fmt.Errorf("write xlb_cfg: %w", err)
	}
	return d.writeTimeouts(s.StateTimeouts())
}
