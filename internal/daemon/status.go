// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/doctor"
)

// checkHost runs the host checks of xlb doctor that concern the daemon's
// own start and keeps what they find for xlb status.
func (d *Daemon) checkHost() {
	for _, f := range append(doctor.Forwarding(), doctor.PinPath(d.opts.PinPath)) {
		if f.Severity == doctor.OK || f.Severity == doctor.Unknown {
			continue
		}
		msg := f.What
		if f.Fix != "" {
			msg += "; fix: " + f.Fix
		}
		d.log.Warn(msg)
		d.hostWarnings = append(d.hostWarnings, msg)
	}
}

// Daemon implements api.Backend.
func (d *Daemon) Daemon() api.DaemonInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	info := api.DaemonInfo{Started: d.started, ConfigPath: d.opts.ConfigPath, PinPath: d.opts.PinPath, FileRevision: d.fileRevision,
		MultiBuffer: d.dp.MultiBuffer(), WorkerCPUs: d.dp.WorkerCPUs(), HostWarnings: append([]string(nil), d.hostWarnings...)}
	for _, name := range d.cur.Interfaces {
		info.Interfaces = append(info.Interfaces, api.Interface{Name: name, Mode: d.cur.Mode.String()})
	}
	return info
}
