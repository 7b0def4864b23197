// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab"
)

func newLabCmd() *cobra.Command {
	topo := lab.Default
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build and use the network-namespace lab (client, lb, reals)",
	}
	cmd.PersistentFlags().StringVar(&topo.Name, "name", topo.Name, "lab name: prefix of its namespaces")
	cmd.PersistentFlags().Uint8Var(&topo.Net, "net", topo.Net, "second octet of the lab's addresses (10.NET.0.0/16)")
	cmd.PersistentFlags().IntVar(&topo.Reals, "reals", topo.Reals, "number of real servers")

	up := &cobra.Command{
		Use:   "up",
		Short: "Create the lab's namespaces, links and addresses",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := topo.Up(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s up: VIP %s, local IP %s, client %s, %d reals\n",
				topo.Name, topo.VIP(), topo.LocalIP(), topo.ClientAddr(), topo.Reals)
			return nil
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Remove the lab's namespaces and everything in them",
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return topo.Down() },
	}
	var requests int
	var generic bool
	demo := &cobra.Command{
		Use:   "demo",
		Short: "Build the lab, balance TCP and UDP through xlb, show who answered, remove the lab",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the xlb binary: %w", err)
			}
			mode := datapath.ModeNative
			if generic {
				mode = datapath.ModeGeneric
			}
			_, err = lab.Demo(cmd.Context(), cmd.OutOrStdout(), lab.DemoOptions{Topology: topo, Requests: requests, Self: self, Mode: mode})
			return err
		},
	}
	demo.Flags().IntVar(&requests, "requests", 12, "HTTP requests and UDP datagrams to send")
	demo.Flags().BoolVar(&generic, "generic", false, "attach XDP in generic mode instead of native")

	var name, listen string
	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Run a real server's HTTP and UDP echo services (used inside the lab)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.Serve(cmd.Context(), name, listen)
		},
	}
	serve.Flags().StringVar(&name, "name", "real", "name the server answers with")
	serve.Flags().StringVar(&listen, "listen", ":80", "address to listen on (TCP and UDP)")

	cmd.AddCommand(up, down, demo, serve)
	return cmd
}
