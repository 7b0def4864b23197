// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// CheckReport says what an offline check (xlb config check) looked at.
type CheckReport struct {
	Services   int      `json:"services"`
	Reals      int      `json:"reals"`
	Checked    []string `json:"checked"`
	NotChecked []string `json:"not_checked"`
}

// CheckOffline validates cfg as a daemon starting on this host would
// before it loads anything, with no daemon and without changing the host
// (as keepalived -t and nginx -t do): the file's rules, the compiled data
// path's capacities, the configured interfaces, the host's own addresses
// (those the daemon recorded in pinPath as its own excepted), the kernel
// features of the services, and the memory for the connection tables.
// Every problem is in the *config.ValidationError it returns.
func CheckOffline(cfg *config.Config, pinPath string) (CheckReport, error) {
	rep := CheckReport{
		Checked: []string{"keys and values", "the capacities the file asks for (max_services, max_reals, max_local_ips) against its services, reals and local IPs",
			"interfaces exist", "VIPs and local IPs against the host's own addresses",
			"kernel features of client_address and syn_proxy", "connection tables against MemAvailable"},
		NotChecked: []string{
			"the local IPs a running data path holds from earlier configurations (they count against max_local_ips)",
			"pinned maps' sizes and layout (a daemon started with other sizes keeps them: --drop-incompatible-maps)",
			"whether each interface's driver attaches the program in the XDP mode asked",
			"next hops of the reals (resolved by the daemon once it runs)",
		},
	}
	// a data path loaded for this file: its capacities are the file's
	services := cmp.Or(cfg.MaxServices, loadbalancer.DefaultServiceCapacity)
	limits := loadbalancer.Limits{Services: services, VIPs: services,
		Reals: cmp.Or(cfg.MaxReals, loadbalancer.DefaultRealCapacity), LocalIPs: cmp.Or(cfg.MaxLocalIPs, loadbalancer.DefaultLocalIPCapacity)}
	owns, err := hostOwnsOffline(pinPath)
	if err != nil {
		return rep, err
	}
	var problems []string
	add := func(err error) error {
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		problems = append(problems, ve.Problems...)
		return nil
	}
	want, err := cfg.DesiredIn(config.Env{Limits: limits, HostOwns: owns})
	if err != nil {
		if err := add(err); err != nil {
			return rep, err
		}
	}
	// the interfaces whatever else is wrong: a file refused for one
	// thing should name all of them
	if err := interfacesExist(cfg.Interfaces); err != nil {
		if err := add(err); err != nil {
			return rep, err
		}
	}
	if want == nil {
		return rep, &config.ValidationError{Problems: problems}
	}
	for i, s := range want.Services {
		if err := datapath.CheckKernel(s); err != nil {
			problems = append(problems, fmt.Sprintf("services[%d] (%s): %v", i, s.Key, err))
		}
		rep.Reals += len(want.Reals[s.Key])
	}
	if err := datapath.CheckTablesFit(want.ConnTable); err != nil {
		problems = append(problems, "conn_table: "+err.Error())
	}
	rep.Services = len(want.Services)
	if problems != nil {
		return rep, &config.ValidationError{Problems: problems}
	}
	return rep, nil
}

// hostOwnsOffline is Daemon.hostOwns for a checker beside the daemon:
// the daemon's record in pinPath is read, never created.
func hostOwnsOffline(pinPath string) (apply.HostOwns, error) {
	var rec *hoststate.Record
	if pinPath != "" && pinPath != "none" {
		var err error
		if rec, err = hoststate.Peek(pinPath); err != nil {
			return nil, err
		}
	}
	return hostOwnsBesides(rec)
}
