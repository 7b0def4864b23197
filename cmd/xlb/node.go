// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
)

// newNodeCmd is `xlb node`: the node's BGP peers and routes, and its
// drain.
func newNodeCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Show the node's BGP peers and what it announces; drain or resume it",
		Long: `Shows the node's name, whether it is drained, its BGP peers with their
session state, and every VIP and local IP with whether it is announced
and, for a VIP withdrawn, why: no real of its services takes
connections, the node is drained, or the daemon is stopping.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.client().Node(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			return printNode(cmd, g, st)
		},
	}
	drain := &cobra.Command{
		Use:   "drain",
		Short: "Withdraw the node's VIPs; it keeps forwarding what the routers still send it",
		Long: `Withdraws every VIP of the node from its BGP peers, as a stop does,
without stopping: the routers send new connections to the other nodes,
and the node keeps forwarding the packets that still reach it. The local
IPs stay announced, so the replies of its connections keep coming back.
The drain lasts until xlb node resume or the daemon's stop: a hand-over
or a crash keeps it (it is recorded next to the pins).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.client().Drain(cmd.Context(), true)
			if err != nil {
				return daemonError(err)
			}
			return printNode(cmd, g, st)
		},
	}
	resume := &cobra.Command{
		Use:   "resume",
		Short: "Announce the node's VIPs again after a drain",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.client().Drain(cmd.Context(), false)
			if err != nil {
				return daemonError(err)
			}
			return printNode(cmd, g, st)
		},
	}
	cmd.AddCommand(drain, resume)
	c.register(cmd)
	return cmd
}

func printNode(cmd *cobra.Command, g *globalFlags, st api.NodeStatus) error {
	if g.json {
		return printJSON(cmd, st)
	}
	writeNode(cmd.OutOrStdout(), st, time.Now())
	return nil
}

// writeNode prints the node as `vtysh show bgp summary` and `xlb status`
// would: a line each for the node and the speaker, then the peers and
// the routes as tables.
func writeNode(w io.Writer, st api.NodeStatus, now time.Time) {
	state := "taking traffic"
	switch {
	case st.Stopping:
		state = "stopping"
	case st.Drained:
		state = "drained"
	}
	fmt.Fprintf(w, "Node:    %s, %s\n", st.Name, state)
	defer writeSync(w, st.Sync)
	if st.BGP == nil {
		fmt.Fprintln(w, "BGP:     none (no node.bgp section)")
		return
	}
	fmt.Fprintf(w, "BGP:     AS %d, router id %s\n\n", st.BGP.ASN, st.BGP.RouterID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Peer\tAS\tState\tFor\tRoutes\tGraceful restart\tLast error")
	for _, p := range st.BGP.Peers {
		since := "-"
		if !p.Since.IsZero() {
			since = now.Sub(p.Since).Round(time.Second).String()
		}
		gr := "no"
		if p.GracefulRestart {
			gr = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\n", p.Address, p.ASN, p.State, since, p.Advertised, gr, dash(p.LastError))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Route\tKind\tAnnounced\tCommunities\tWhy not")
	for _, r := range st.BGP.Routes {
		yes := "yes"
		if !r.Announced {
			yes = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Prefix, strings.ReplaceAll(r.Kind, "_", " "), yes,
			dash(strings.Join(r.Communities, " ")), dash(r.Reason))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeSync prints the connection sync with every peer, both ways.
func writeSync(w io.Writer, peers []api.SyncPeer) {
	if len(peers) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Sync peer\tId\tAddress\tOut\tSent\tDropped\tQueued\tIn\tReceived\tInstalled\tRefreshed\tRefused")
	for _, p := range peers {
		out, in := "down", "down"
		if p.OutConnected {
			out = "up"
		}
		if p.InConnected {
			in = "up"
			if !p.Resynced {
				in = "resyncing"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\n", p.Name, p.ID, p.Address, out, p.Sent, p.Dropped, p.Queued,
			in, p.Received, p.Installed, p.Refreshed, p.Own+p.Stale+p.NoService+p.NoReal+p.Full)
	}
	tw.Flush()
}
