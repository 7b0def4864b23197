// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/daemon"
	"github.com/xlb-dev/xlb/internal/datapath"
)

func newDatapathCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datapath",
		Short: "Inspect the XDP data path without a daemon",
	}
	cmd.AddCommand(newDatapathCheckCmd(g), newDatapathDetachCmd())
	return cmd
}

func newDatapathDetachCmd() *cobra.Command {
	pinPath, socket := daemon.DefaultPinPath, api.DefaultSocket
	cmd := &cobra.Command{
		Use:   "detach",
		Short: "Remove a data path no daemon runs: links, pins, and its host addresses and neighbour entries",
		Long: "A daemon killed (or handed over with SIGUSR2) leaves its data path\n" +
			"forwarding for the next daemon. When none will come, this removes it:\n" +
			"the neighbour entries and host addresses recorded next to the pins, the\n" +
			"XDP links, and the pins. It refuses while a daemon runs (stop that one\n" +
			"with SIGTERM instead). Needs root.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return daemon.RemoveLeftovers(pinPath, socket, nil)
		},
	}
	cmd.Flags().StringVar(&pinPath, "pin-path", pinPath, "the daemon's bpffs directory")
	cmd.Flags().StringVar(&socket, "socket", socket, "the daemon's API socket (its lock is next to it)")
	return cmd
}

// checkResult is what `xlb datapath check` reports.
type checkResult struct {
	Loaded     bool                     `json:"loaded"`
	ConnTables []datapath.ConnTableSize `json:"conn_tables"`
	CPUs       int                      `json:"cpus"`
}

func newDatapathCheckCmd(g *globalFlags) *cobra.Command {
	var opts datapath.Options
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Load the data path into this kernel (verifier included) and unload it",
		Long: "Loads the XDP program and creates its maps, unpinned, then releases them.\n" +
			"It proves this kernel accepts xlb, and with --conns4/--conns6 that\n" +
			"connection tables of those sizes can be allocated. Needs root.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dp, err := datapath.Load(opts)
			if err != nil {
				return err
			}
			defer dp.Close()
			res := checkResult{Loaded: true, ConnTables: dp.ConnTableSizes(), CPUs: dp.CPUs()}
			if g.json {
				return printJSON(cmd, res)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "data path\tloaded and verified\n")
			for _, t := range res.ConnTables {
				fmt.Fprintf(w, "%s connection table\t%d connections, %d slots, %.1f MiB\n", t.Family, t.Conns, t.Slots, float64(t.Bytes)/(1<<20))
			}
			fmt.Fprintf(w, "CPUs sharing the local port range\t%d\n", res.CPUs)
			return w.Flush()
		},
	}
	cmd.Flags().Uint32Var(&opts.Conns4, "conns4", 0, "IPv4 connection table size, in connections (0 = default)")
	cmd.Flags().Uint32Var(&opts.Conns6, "conns6", 0, "IPv6 connection table size, in connections (0 = default)")
	return cmd
}
