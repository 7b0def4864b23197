// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// change runs one change against the daemon and prints the result.
func change(cmd *cobra.Command, g *globalFlags, c *clientFlags, method, path string, body any) error {
	res, err := c.client().Change(cmd.Context(), method, path, body)
	if err != nil {
		return daemonError(err)
	}
	return printResult(cmd, g, res)
}

func newServiceCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "service", Short: "Add, edit or delete a virtual service (ipvsadm -A/-E/-D)"}
	var c clientFlags
	c.register(cmd)
	for _, verb := range []string{"add", "edit", "del"} {
		var svc serviceFlag
		var name, sched string
		var laddrs []string
		var hostAddr bool
		sub := &cobra.Command{
			Use:   verb + " -t|-u VIP:PORT",
			Short: map[string]string{"add": "Add a FullNAT service", "edit": "Change a service's scheduler or local IPs", "del": "Delete a service"}[verb],
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				proto, ap, err := svc.parse()
				if err != nil {
					return err
				}
				path := api.ServicePath(proto, ap.Addr().String(), int(ap.Port()))
				body := config.Service{Name: name, VIP: ap.Addr().String(), Port: int(ap.Port()), Protocol: proto,
					Scheduler: sched, Mode: "fullnat", LocalIPs: laddrs, HostAddress: hostAddr}
				switch verb {
				case "add":
					return change(cmd, g, &c, http.MethodPost, "/v1/services", body)
				case "edit":
					edit := map[string]any{}
					if cmd.Flags().Changed("scheduler") {
						edit["scheduler"] = sched
					}
					if cmd.Flags().Changed("laddr") {
						edit["local_ips"] = laddrs
					}
					if cmd.Flags().Changed("name") {
						edit["name"] = name
					}
					if cmd.Flags().Changed("host-address") {
						edit["host_address"] = hostAddr
					}
					if len(edit) == 0 {
						return usageError{fmt.Errorf("nothing to edit: give --scheduler, --laddr, --name or --host-address")}
					}
					return change(cmd, g, &c, http.MethodPut, path, edit)
				}
				return change(cmd, g, &c, http.MethodDelete, path, nil)
			},
		}
		svc.register(sub)
		if verb != "del" {
			if verb == "add" {
				sub.Flags().StringVarP(&sched, "scheduler", "s", "rr", "scheduler: "+loadbalancer.SchedulerNames())
			} else {
				sub.Flags().StringVarP(&sched, "scheduler", "s", "", "the new scheduler: "+loadbalancer.SchedulerNames())
			}
			sub.Flags().StringSliceVarP(&laddrs, "laddr", "z", nil, "local IPs FullNAT uses towards the reals, addresses or ranges (10.0.3.100-149; repeat or comma-separate)")
			sub.Flags().StringVar(&name, "name", "", "a name for the service")
			sub.Flags().BoolVar(&hostAddr, "host-address", false, "the VIP may be an address the host already has (host_address)")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

func newRealCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "real", Short: "Add, edit or delete a real server (ipvsadm -a/-e/-d)"}
	var c clientFlags
	c.register(cmd)
	for _, verb := range []string{"add", "edit", "del"} {
		var svc serviceFlag
		var real string
		var weight int
		sub := &cobra.Command{
			Use:   verb + " -t|-u VIP:PORT -r REAL:PORT",
			Short: map[string]string{"add": "Add a real", "edit": "Change a real's weight (0 drains it)", "del": "Delete a real"}[verb],
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				path, err := svc.path()
				if err != nil {
					return err
				}
				rp, err := parseReal(real)
				if err != nil {
					return err
				}
				realPath := fmt.Sprintf("%s/reals/%s/%d", path, rp.Addr(), rp.Port())
				switch verb {
				case "add":
					w := weight
					return change(cmd, g, &c, http.MethodPost, path+"/reals", config.Real{Address: rp.Addr().String(), Port: int(rp.Port()), Weight: &w})
				case "edit":
					if !cmd.Flags().Changed("weight") {
						return usageError{fmt.Errorf("nothing to edit: give --weight")}
					}
					return change(cmd, g, &c, http.MethodPut, realPath, api.Weight(weight))
				}
				return change(cmd, g, &c, http.MethodDelete, realPath, nil)
			},
		}
		svc.register(sub)
		sub.Flags().StringVarP(&real, "real-server", "r", "", "real server ADDRESS:PORT (port 0 keeps the client's)")
		if verb != "del" {
			sub.Flags().IntVarP(&weight, "weight", "w", 1, "weight, 0 to 65535; 0 drains")
		}
		cmd.AddCommand(sub)
	}
	cmd.AddCommand(newDrainCmd(g, &c))
	return cmd
}

// parseReal parses ADDRESS:PORT, or a bare address meaning port 0.
func parseReal(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, usageError{fmt.Errorf("which real? give -r ADDRESS:PORT")}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 0), nil
	}
	ap, err := parseAddrPort("real", s)
	if err != nil {
		return netip.AddrPort{}, usageError{err}
	}
	return ap, nil
}

func newLaddrCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "laddr", Short: "Add or delete a service's FullNAT local IP (DPVS ipvsadm --add-laddr)"}
	var c clientFlags
	c.register(cmd)
	for _, verb := range []string{"add", "del"} {
		var svc serviceFlag
		var addr string
		sub := &cobra.Command{
			Use:   verb + " -t|-u VIP:PORT -z IP|RANGE",
			Short: map[string]string{"add": "Add a local IP", "del": "Delete a local IP"}[verb],
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				path, err := svc.path()
				if err != nil {
					return err
				}
				a, _, err := config.ParseLocalIPs(addr)
				if err != nil {
					return usageError{fmt.Errorf("--laddr: %w", err)}
				}
				if verb == "add" {
					return change(cmd, g, &c, http.MethodPost, path+"/laddrs", api.LocalIP{Address: a})
				}
				return change(cmd, g, &c, http.MethodDelete, path+"/laddrs/"+a, nil)
			},
		}
		svc.register(sub)
		sub.Flags().StringVarP(&addr, "laddr", "z", "", "the local IP, or a range of them (10.0.3.100-149, 2001:db8::100-1ff)")
		cmd.AddCommand(sub)
	}
	return cmd
}
