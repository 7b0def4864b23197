// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/daemon"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/doctor"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// exitProblems is doctor's exit code when it found a problem.
const exitProblems = 1

func newDoctorCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	var configPath string
	pinPath := daemon.DefaultPinPath
	var strict bool
	cmd := &cobra.Command{
		Use:   "doctor [--config FILE]",
		Short: "Check the host against what the data path needs; print each problem with the command that fixes it",
		Long: `Checks, in this network namespace: IP forwarding; each interface of the
data path (it exists and is up, its XDP program and mode, a veth peer that
takes redirected frames, its MTU against the program and the other
interfaces); that every real's next hop is resolved; the kernel features
the services need; that every service has a local IP; and that the pin
path outlives the daemon (not a bpffs private to its mount namespace, as
under ip netns exec).

It asks the running daemon (--socket) what it runs; without a daemon it
reads --config. Exit codes: 0 no problem (warnings are printed), 1 a
problem (or a warning with --strict), 2 a wrong command line.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			findings, err := runDoctor(cmd.Context(), c.client(), configPath, pinPath)
			if err != nil {
				return err
			}
			if g.json {
				if err := printJSON(cmd, findings); err != nil {
					return err
				}
			} else {
				writeFindings(cmd.OutOrStdout(), findings)
			}
			for _, f := range findings {
				if f.Severity == doctor.Problem || (strict && f.Severity == doctor.Warning) {
					return codedError{exitProblems, errors.New("doctor found problems")}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "/etc/xlb/xlb.yaml", "configuration file, read when no daemon answers")
	cmd.Flags().StringVar(&pinPath, "pin-path", pinPath, "pin path, checked when no daemon answers")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	c.register(cmd)
	return cmd
}

// runDoctor gathers what the daemon runs (or the file says) and runs
// every check.
func runDoctor(ctx context.Context, cl *api.Client, configPath, pinPath string) ([]doctor.Finding, error) {
	out := doctor.Forwarding()
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := cl.Status(qctx)
	if err == nil {
		svcs, err := cl.Services(qctx)
		if err != nil {
			return nil, err
		}
		return append(out, daemonFindings(st, svcs)...), nil
	}
	out = append(out, doctor.Finding{Check: "daemon", Severity: doctor.Warning,
		What: fmt.Sprintf("no daemon answers (%v); checking %s instead", err, configPath)})
	data, rerr := os.ReadFile(configPath)
	if rerr != nil {
		return nil, fmt.Errorf("no daemon answers and the configuration cannot be read: %w", rerr)
	}
	cfg, perr := config.Parse(data)
	if perr != nil {
		return nil, fmt.Errorf("%s: %w", configPath, perr)
	}
	want, derr := cfg.Desired()
	if derr != nil {
		return nil, fmt.Errorf("%s: %w (xlb config check %s says more)", configPath, derr, configPath)
	}
	out = append(out, doctor.Interfaces(want.Interfaces, want.Mode.String(), false, xdpfrags.Supported(), datapath.SingleBufferMTU())...)
	var reals []netip.Addr
	for _, rs := range want.Reals {
		for _, r := range rs {
			reals = append(reals, r.Addr)
		}
	}
	slices.SortFunc(reals, netip.Addr.Compare)
	out = append(out, doctor.NextHops(slices.Compact(reals))...)
	out = append(out, doctor.Kernel(want.Services)...)
	out = append(out, doctor.LocalIPs(want.Services)...)
	return append(out, doctor.PinPath(pinPath)), nil
}

// daemonFindings checks what the running daemon runs: its interfaces,
// its reals' next hops as it sees them, its services, and what it found
// wrong with its host (its pin path, as its mount namespace sees it).
func daemonFindings(st api.Status, svcs []api.Service) []doctor.Finding {
	var out []doctor.Finding
	names := make([]string, len(st.Interfaces))
	mode := "native"
	for i, ifc := range st.Interfaces {
		names[i], mode = ifc.Name, ifc.Mode
	}
	out = append(out, doctor.Interfaces(names, mode, true, st.MultiBuffer, datapath.SingleBufferMTU())...)
	var services []loadbalancer.Service
	unresolved := 0
	for _, s := range svcs {
		services = append(services, loadbalancer.Service{Key: s.Key(), LocalIPs: s.LocalIPs})
		for _, r := range s.Reals {
			if r.NextHop == api.NextHopUnresolved {
				unresolved++
				out = append(out, doctor.Finding{Check: "next hop of " + r.Address.String(), Severity: doctor.Problem,
					What: fmt.Sprintf("real %s of %s is unresolved: %s; it gets no new connections", netip.AddrPortFrom(r.Address, r.Port), s.Key(), r.NextHopReason),
					Fix:  fmt.Sprintf("check that the next hop answers ARP or neighbour discovery (ip neigh show; a route to %s)", r.Address)})
			}
		}
	}
	if unresolved == 0 {
		out = append(out, doctor.Finding{Check: "next hops", Severity: doctor.OK, What: "the daemon has every real's next hop resolved"})
	}
	out = append(out, doctor.LocalIPs(services)...)
	for _, w := range st.HostWarnings {
		what, fix, _ := strings.Cut(w, "; fix: ")
		out = append(out, doctor.Finding{Check: "daemon's host", Severity: doctor.Problem, What: what, Fix: fix})
	}
	if len(st.HostWarnings) == 0 {
		out = append(out, doctor.Finding{Check: "daemon's host", Severity: doctor.OK,
			What: fmt.Sprintf("the daemon found nothing wrong with its host at its start (pins in %s outlive it)", st.PinPath)})
	}
	return out
}

// writeFindings prints one finding a line, its fix under it, and a
// summary.
func writeFindings(w io.Writer, findings []doctor.Finding) {
	count := map[doctor.Severity]int{}
	for _, f := range findings {
		count[f.Severity]++
		fmt.Fprintf(w, "%-8s %s: %s\n", strings.ToUpper(string(f.Severity)), f.Check, f.What)
		if f.Fix != "" {
			fmt.Fprintf(w, "%-8s fix: %s\n", "", f.Fix)
		}
	}
	fmt.Fprintf(w, "\n%d problems, %d warnings, %d checks ok, %d could not tell\n", count[doctor.Problem], count[doctor.Warning], count[doctor.OK], count[doctor.Unknown])
}
