// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/lab/cluster"
	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

func newLabCmd() *cobra.Command {
	topology := topo.Default
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build and use the network-namespace lab (client, lb, reals)",
	}
	cmd.PersistentFlags().StringVar(&topology.Name, "name", topology.Name, "lab name: prefix of its namespaces")
	cmd.PersistentFlags().Uint8Var(&topology.Net, "net", topology.Net, "second octet of the lab's addresses (10.NET.0.0/16)")
	cmd.PersistentFlags().IntVar(&topology.Reals, "reals", topology.Reals, "number of real servers")

	// down and exec find a lab that is up by its name: its net and size
	// are what `lab up` recorded, whatever the flags say.
	saved := func(cmd *cobra.Command) error {
		t, ok, err := topo.Saved(topology.Name)
		if err != nil || !ok {
			return err
		}
		for flag, differs := range map[string]bool{"net": t.Net != topology.Net, "reals": t.Reals != topology.Reals} {
			if cmd.Flags().Changed(flag) && differs {
				return usageError{fmt.Errorf("--%s: lab %s is up with net %d and %d reals", flag, t.Name, t.Net, t.Reals)}
			}
		}
		topology = t
		return nil
	}

	var upNodes int
	up := &cobra.Command{
		Use:   "up",
		Short: "Create the lab's namespaces, links and addresses",
		Long: `Create the lab's namespaces, links and addresses. Every link keeps
Linux's defaults (checksum offload on, empty neighbour tables) except GRO
on the veth peers xlb redirects into, which the operator guide asks of
every such peer. With --bridge the reals share one L2 segment behind the
balancer's l1, through a bridge in the namespace <name>-sw.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the xlb binary: %w", err)
			}
			if upNodes > 0 {
				return clusterUp(cmd, cluster.New(topology.Name, topology.Net, upNodes, topology.Reals), self)
			}
			if err := topology.Up(); err != nil {
				return err
			}
			if _, err := topology.StartServers(topo.XLBServe(self), true); err != nil {
				_ = topology.Down()
				return err
			}
			cfg, _, pins := topology.DaemonFiles()
			if err := topology.WriteConfig(topology.Config("rr")); err != nil {
				_ = topology.Down()
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "lab %s up: client %s, lb on %s, reals %s..%s answering HTTP and UDP echo on port %d\n",
				topology.Name, topology.ClientAddr(), strings.Join(topology.LBInterfaces(), ","), topology.RealAddr(1), topology.RealAddr(topology.Reals), topo.ServicePort)
			fmt.Fprintf(w, "a daemon config for VIP %s and [%s] (local IPs %s, %s) is in %s:\n", topology.VIP(), topology.VIP6(), topology.LocalIP(), topology.LocalIP6(), cfg)
			fmt.Fprintf(w, "  xlb lab exec lb -- xlb daemon --config %s --pin-path %s &\n", cfg, pins)
			fmt.Fprintf(w, "  xlb lab exec client -- curl -s http://%s/\n", topology.VIP())
			return nil
		},
	}
	up.Flags().BoolVar(&topology.Bridge, "bridge", false, "put the reals behind one bridge (one L2 segment) instead of a link each")
	up.Flags().IntVar(&upNodes, "nodes", 0, "build a cluster of this many xlb nodes behind an FRR router (ECMP, BGP) instead of one balancer")
	down := &cobra.Command{
		Use:   "down",
		Short: "Remove the lab's namespaces and everything in them",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c, ok, err := cluster.Saved(topology.Name); err != nil || ok {
				if err != nil {
					return err
				}
				return c.Down()
			}
			if err := saved(cmd); err != nil {
				return err
			}
			return topology.Down()
		},
	}
	var requests, nodes int
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
			if nodes > 0 {
				_, err := cluster.Demo(cmd.Context(), cmd.OutOrStdout(), cluster.DemoOptions{
					Cluster: cluster.New(topology.Name, topology.Net, nodes, topology.Reals), Requests: requests, Self: self})
				return err
			}
			mode := loadbalancer.ModeNative
			if generic {
				mode = loadbalancer.ModeGeneric
			}
			_, err = topo.Demo(cmd.Context(), cmd.OutOrStdout(), topo.DemoOptions{Topology: topology, Requests: requests, Self: self, Mode: mode})
			return err
		},
	}
	demo.Flags().IntVar(&requests, "requests", 12, "HTTP requests and UDP datagrams to send")
	demo.Flags().BoolVar(&generic, "generic", false, "attach XDP in generic mode instead of native")
	demo.Flags().IntVar(&nodes, "nodes", 0, "build a cluster of this many xlb nodes behind an FRR router (ECMP, BGP) instead")

	exec := &cobra.Command{
		Use:   "exec NODE -- CMD [ARGS...]",
		Short: "Run a command inside a lab node (client, lb, realN; in a cluster router, nodeN)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1], args[2:]...)
			}
			if err := saved(cmd); err != nil {
				return err
			}
			if len(args) < 2 {
				return usageError{fmt.Errorf("want a node and a command: xlb lab exec NODE -- CMD [ARGS...]")}
			}
			ns, err := topology.Node(args[0])
			if c, ok, cerr := cluster.Saved(topology.Name); cerr == nil && ok {
				ns, err = c.NodeNS(args[0])
			}
			if err != nil {
				return usageError{err}
			}
			c := topology.Exec(ns, args[1], args[2:]...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			var ee *osexec.ExitError
			if err := c.Run(); errors.As(err, &ee) {
				return exitStatus(ee.ExitCode())
			} else if err != nil {
				return fmt.Errorf("run in %s: %w", ns, err)
			}
			return nil
		},
	}
	exec.Flags().SetInterspersed(false) // the command's flags are its own

	var name, listen string
	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Run a real server's HTTP and UDP echo services (used inside the lab)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return topo.Serve(cmd.Context(), name, listen)
		},
	}
	serve.Flags().StringVar(&name, "name", "real", "name the server answers with")
	serve.Flags().StringVar(&listen, "listen", ":80", "address to listen on (TCP and UDP)")

	cmd.AddCommand(up, down, exec, demo, serve)
	return cmd
}

// clusterUp builds a cluster lab with its servers and the nodes'
// configurations, and says how to start each node's daemon.
func clusterUp(cmd *cobra.Command, c cluster.Cluster, self string) error {
	if err := c.Up(); err != nil {
		return err
	}
	if _, err := c.StartServers(topo.XLBServe(self), true); err != nil {
		_ = c.Down()
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "cluster lab %s up: client %s, router %s (FRR, AS %d), nodes 1..%d (AS %d), reals %s..%s on port %d\n",
		c.Name, c.ClientAddr(), c.RouterAddr(), cluster.RouterASN, c.Nodes, cluster.NodeASN, c.RealAddr(1), c.RealAddr(c.Reals), topo.ServicePort)
	fmt.Fprintf(w, "VIP %s; start every node's daemon:\n", c.VIP())
	for i := 1; i <= c.Nodes; i++ {
		if err := c.WriteNodeConfig(i, c.NodeConfig(i, cluster.NodeOptions{})); err != nil {
			_ = c.Down()
			return err
		}
		cfg, sock, pins := c.NodeFiles(i)
		fmt.Fprintf(w, "  xlb lab exec node%d -- xlb daemon --config %s --socket %s --pin-path %s &\n", i, cfg, sock, pins)
	}
	_, sock, _ := c.NodeFiles(1)
	fmt.Fprintf(w, "then: xlb node --socket %s; xlb lab exec router -- vtysh --vty_socket %s -c 'show ip route'\n", sock, c.FRRDir())
	fmt.Fprintf(w, "  xlb lab exec client -- curl -s http://%s/\n", c.VIP())
	return nil
}
