// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
)

func newStatusCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the daemon, its configuration and data path at a glance, and what needs attention",
		Long: `Shows whether the daemon runs, its version and uptime, the interfaces
and their XDP mode, the configuration file and its revision, the services
and reals (up, down, unresolved, drained), the connection tables'
occupancy, and warnings: reals down or unresolved, services without a
local IP or without a real taking connections, tables above 90%, frames
lost after a redirect, and what the daemon found wrong with its host.
Exits 0 when the daemon answers (warnings or not), 1 when it does not.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.client().Status(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			if g.json {
				return printJSON(cmd, st)
			}
			writeStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	c.register(cmd)
	return cmd
}

// writeStatus prints st as cilium status does: one line per part, the
// warnings last.
func writeStatus(w io.Writer, st api.Status) {
	line := func(k, format string, a ...any) {
		fmt.Fprintf(w, "%-13s "+format+"\n", append([]any{k + ":"}, a...)...)
	}
	line("Daemon", "running, xlb %s, up %s (since %s)", st.Version, st.Uptime.String(), st.Started.Format("2006-01-02 15:04:05"))
	line("Config", "%s, revision %d", st.ConfigPath, st.Revision)
	line("Pins", "%s", st.PinPath)
	ifs := make([]string, len(st.Interfaces))
	for i, ifc := range st.Interfaces {
		ifs[i] = fmt.Sprintf("%s (%s)", ifc.Name, ifc.Mode)
	}
	buffers := "single-buffer XDP"
	if st.MultiBuffer {
		buffers = "multi-buffer XDP (jumbo frames in native mode)"
	}
	line("Interfaces", "%s; %s", strings.Join(ifs, ", "), buffers)
	if len(st.WorkerCPUs) > 0 {
		cpus := make([]string, len(st.WorkerCPUs))
		for i, c := range st.WorkerCPUs {
			cpus[i] = strconv.Itoa(c)
		}
		line("Workers", "CPUs %s, each flow steered to one", strings.Join(cpus, ","))
	}
	line("Services", "%d (%d tcp, %d udp)", st.Services.Total, st.Services.TCP, st.Services.UDP)
	r := st.Reals
	line("Reals", "%d: %d up, %d down, %d unresolved, %d drained", r.Total, r.Up, r.Down, r.Unresolved, r.Drained)
	tables := make([]string, len(st.ConnTables))
	for i, t := range st.ConnTables {
		tables[i] = fmt.Sprintf("%s %d of %d entries (%.1f%%)", t.Family, t.LiveEntries, t.MaxEntries, 100*t.Occupancy)
	}
	line("Conn tables", "%s", strings.Join(tables, ", "))
	if n := st.Node; n.BGP != nil {
		up, vips, announced := 0, 0, 0
		for _, p := range n.BGP.Peers {
			if p.State == "established" {
				up++
			}
		}
		for _, r := range n.BGP.Routes {
			if r.Kind == api.RouteVIP {
				vips++
				if r.Announced {
					announced++
				}
			}
		}
		state := "taking traffic"
		if n.Drained {
			state = "drained"
		}
		line("Node", "%s, %s; BGP AS %d: %d of %d peers established, %d of %d VIPs announced",
			n.Name, state, n.BGP.ASN, up, len(n.BGP.Peers), announced, vips)
	}
	if len(st.Warnings) == 0 {
		line("Warnings", "none")
		return
	}
	line("Warnings", "%d", len(st.Warnings))
	for _, m := range st.Warnings {
		fmt.Fprintf(w, "  - %s\n", m)
	}
}
