// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"fmt"
	"net"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/txmon"
)

// redirectMonitor is the daemon's txmon.Monitor, nil until opened.
type redirectMonitor struct{ m *txmon.Monitor }

// startRedirectMonitor runs after the data path is attached to ifaces. It
// logs a warning for every veth whose peer cannot take redirected frames
// (they would be lost silently) and opens the monitor that counts such
// losses. Neither is fatal: without the monitor the counters stay 0.
func (d *Daemon) startRedirectMonitor(ifaces []string) {
	var ifindexes []int
	for _, name := range ifaces {
		if warning, err := txmon.CheckVethPeer(name); err != nil {
			d.log.Warn("cannot check whether the veth peer takes redirected frames", "interface", name, "err", err)
		} else if warning != "" {
			d.log.Warn(warning, "interface", name)
			d.hostWarnings = append(d.hostWarnings, warning)
		}
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			d.log.Warn("redirect loss counters: interface not found", "interface", name, "err", err)
			continue
		}
		ifindexes = append(ifindexes, ifi.Index)
	}
	if len(ifindexes) == 0 {
		return // txmon.Open without interfaces would count the whole host
	}
	m, err := txmon.Open(ifindexes...)
	if err != nil {
		d.log.Warn("redirect loss counters unavailable (redirect_tx_failed, redirect_errors stay 0)", "err", err)
		return
	}
	d.redirects.m = m
}

// stopRedirectMonitor detaches the monitor, if it was opened.
func (d *Daemon) stopRedirectMonitor() {
	if d.redirects.m == nil {
		return
	}
	if err := d.redirects.m.Close(); err != nil {
		d.log.Warn("close the redirect loss monitor", "err", err)
	}
}

// withRedirectCounts adds the redirect loss counters to st.
func (d *Daemon) withRedirectCounts(st api.Stats) (api.Stats, error) {
	if d.redirects.m == nil {
		return st, nil
	}
	c, err := d.redirects.m.Counts()
	if err != nil {
		return api.Stats{}, fmt.Errorf("redirect loss counters: %w", err)
	}
	st.RedirectTxFailed, st.RedirectErrors = c.RedirectTxFailed, c.RedirectErrors
	return st, nil
}
