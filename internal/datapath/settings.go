// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"time"
)

// Settings are the data path's runtime knobs, the equivalent of
// `ipvsadm --set` and of DPVS's local port range.
type Settings struct {
	TCPSynTimeout time.Duration // handshake not complete
	TCPTimeout    time.Duration // established
	TCPFinTimeout time.Duration // after FIN
	TCPRstTimeout time.Duration // after RST
	UDPTimeout    time.Duration
	// LocalPortMin and LocalPortMax bound the local ports FullNAT uses,
	// inclusive; the range is split evenly over the CPUs.
	LocalPortMin uint16
	LocalPortMax uint16
	// FIBCacheTTL is how long a next hop found by the kernel's FIB is
	// reused for a destination (whole seconds; 0 looks up every packet).
	// Route and neighbour changes take effect within it.
	FIBCacheTTL time.Duration
}

// DefaultSettings returns IPVS's timeouts (TCP 900 s, FIN 120 s, UDP 300 s)
// and the local port range 1025-65535.
func DefaultSettings() Settings {
	return Settings{
		TCPSynTimeout: 60 * time.Second,
		TCPTimeout:    900 * time.Second,
		TCPFinTimeout: 120 * time.Second,
		TCPRstTimeout: 10 * time.Second,
		UDPTimeout:    300 * time.Second,
		LocalPortMin:  1025,
		LocalPortMax:  65535,
		FIBCacheTTL:   time.Second,
	}
}

// Settings returns the settings in force.
func (d *Datapath) Settings() Settings {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settings
}

// SetSettings validates and applies new settings.
func (d *Datapath) SetSettings(s Settings) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.writeSettings(s); err != nil {
		return err
	}
	d.settings = s
	return nil
}

func (d *Datapath) writeSettings(s Settings) error {
	if s.LocalPortMin == 0 || s.LocalPortMax < s.LocalPortMin {
		return fmt.Errorf("local port range %d-%d: want 1 <= min <= max", s.LocalPortMin, s.LocalPortMax)
	}
	if span := int(s.LocalPortMax) - int(s.LocalPortMin) + 1; span < d.cpus {
		return fmt.Errorf("local port range %d-%d: %d ports cannot be split over %d CPUs", s.LocalPortMin, s.LocalPortMax, span, d.cpus)
	}
	var cfg xlbXlbConfig
	for i, t := range []time.Duration{s.TCPSynTimeout, s.TCPTimeout, s.TCPFinTimeout, s.TCPRstTimeout, s.UDPTimeout} {
		if t < time.Second || t > 1<<31*time.Second {
			return fmt.Errorf("timeout %v: want between 1s and 68 years", t)
		}
		cfg.Timeouts[i] = uint32(t / time.Second)
	}
	cfg.LportMin = s.LocalPortMin
	cfg.LportMax = s.LocalPortMax
	cfg.Ncpus = uint32(d.cpus)
	if s.FIBCacheTTL < 0 || s.FIBCacheTTL > time.Hour || s.FIBCacheTTL%time.Second != 0 {
		return fmt.Errorf("fib cache ttl %v: want whole seconds from 0 to 1h", s.FIBCacheTTL)
	}
	cfg.FibCacheTtl = uint32(s.FIBCacheTTL / time.Second)
	if err := d.objs.XlbCfg.Set(cfg); err != nil {
		return fmt.Errorf("write xlb_cfg: %w", err)
	}
	return nil
}
