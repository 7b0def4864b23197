// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/datapath"
)

func newDatapathCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datapath",
		Short: "Inspect the XDP data path without a daemon",
	}
	cmd.AddCommand(newDatapathCheckCmd(g))
	return cmd
}

// checkResult is what `xlb datapath check` reports.
type checkResult struct {
	Loaded       bool   `json:"loaded"`
	ConnEntries  uint32 `json:"conn_entries"`
	Conn6Entries uint32 `json:"conn6_entries"`
	CPUs         int    `json:"cpus"`
}

func newDatapathCheckCmd(g *globalFlags) *cobra.Command {
	var opts datapath.Options
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Load the data path into this kernel (verifier included) and unload it",
		Long: "Loads the XDP program and creates its maps, unpinned, then releases them.\n" +
			"It proves this kernel accepts xlb, and with --conn-entries that the\n" +
			"connection table of that size can be allocated. Needs root.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dp, err := datapath.Load(opts)
			if err != nil {
				return err
			}
			defer dp.Close()
			res := checkResult{Loaded: true, ConnEntries: dp.ConnEntries(), Conn6Entries: dp.Conn6Entries(), CPUs: dp.CPUs()}
			if g.json {
				return printJSON(cmd, res)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "data path\tloaded and verified\n")
			fmt.Fprintf(w, "IPv4 connection entries\t%d\n", res.ConnEntries)
			fmt.Fprintf(w, "IPv6 connection entries\t%d\n", res.Conn6Entries)
			fmt.Fprintf(w, "CPUs sharing the local port range\t%d\n", res.CPUs)
			return w.Flush()
		},
	}
	cmd.Flags().Uint32Var(&opts.ConnEntries, "conn-entries", 0, "IPv4 connection table entries, two per connection (0 = default)")
	cmd.Flags().Uint32Var(&opts.Conn6Entries, "conn6-entries", 0, "IPv6 connection table entries (0 = default)")
	return cmd
}
