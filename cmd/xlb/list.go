// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/netip"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/listing"
)

func newListCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	var numeric, stats, rate bool
	cmd := &cobra.Command{
		Use:   "list [-n] [--stats|--rate]",
		Short: "List services and reals as ipvsadm -L does",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stats && rate {
				return usageError{fmt.Errorf("give --stats or --rate, not both")}
			}
			cl := c.client()
			svcs, err := cl.Services(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			if g.json {
				return printJSON(cmd, svcs)
			}
			if !rate {
				return listing.Write(cmd.OutOrStdout(), svcs, listing.Options{Stats: stats})
			}
			// rates: the difference of two readings a second apart
			const interval = time.Second
			select {
			case <-time.After(interval):
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			}
			next, err := cl.Services(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			return listing.WriteRate(cmd.OutOrStdout(), svcs, next, interval)
		},
	}
	cmd.Flags().BoolVarP(&numeric, "numeric", "n", true, "numeric addresses and ports (always; accepted for ipvsadm habits)")
	cmd.Flags().BoolVar(&stats, "stats", false, "connections, packets and bytes")
	cmd.Flags().BoolVar(&rate, "rate", false, "connections, packets and bytes per second, over one second")
	c.register(cmd)
	return cmd
}

func newConnCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "conn", Short: "Inspect the connection table"}
	var c clientFlags
	c.register(cmd)
	var vip string
	list := &cobra.Command{
		Use:   "list [--service VIP]",
		Short: "List connection entries (ipvsadm -Lnc)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if vip != "" {
				if _, err := netip.ParseAddr(vip); err != nil {
					return usageError{fmt.Errorf("--service %q: want the VIP address", vip)}
				}
			}
			conns, err := c.client().Conns(cmd.Context(), vip)
			if err != nil {
				return daemonError(err)
			}
			if g.json {
				return printJSON(cmd, conns)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 1, ' ', 0)
			fmt.Fprintln(w, "pro\tidle\tstate\tsource\tvirtual/local\tdestination/peer\tdir")
			for _, cn := range conns {
				dir := "in"
				if cn.Reverse {
					dir = "out"
				}
				fmt.Fprintf(w, "%s\tidle %.0fs\t%s\t%s\t%s\t%s\t%s\n", cn.Protocol, cn.IdleSecs, cn.State, cn.From, cn.To, cn.Peer, dir)
			}
			return w.Flush()
		},
	}
	list.Flags().StringVar(&vip, "service", "", "only the connections of this VIP")
	cmd.AddCommand(list)
	return cmd
}

func newStatsCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	var wf watchFlags
	var watch bool
	cmd := &cobra.Command{
		Use:   "stats [--watch [--interval 1s] [--count N]]",
		Short: "Show drops by reason, XDP verdicts, frames lost after a redirect and the connection tables' occupancy",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch {
				if g.json {
					return usageError{fmt.Errorf("--watch prints text; read /v1/stats for JSON")}
				}
				return wf.watch(cmd, c.client(), func(prev, cur listing.Reading) error {
					return listing.WriteStatsDelta(cmd.OutOrStdout(), prev, cur)
				})
			}
			st, err := c.client().Stats(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			if g.json {
				return printJSON(cmd, st)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, part := range []struct {
				title string
				m     map[string]uint64
			}{{"verdict", st.Verdicts}, {"drop reason", st.Drops}} {
				keys := make([]string, 0, len(part.m))
				for k := range part.m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				fmt.Fprintf(w, "%s\tpackets\n", part.title)
				for _, k := range keys {
					fmt.Fprintf(w, "%s\t%d\n", k, part.m[k])
				}
				fmt.Fprintln(w, "\t")
			}
			// Frames lost after a redirect, which no interface counts.
			fmt.Fprintf(w, "redirect\tframes\n")
			fmt.Fprintf(w, "tx_failed\t%d\n", st.RedirectTxFailed)
			fmt.Fprintf(w, "errors\t%d\n", st.RedirectErrors)
			fmt.Fprintln(w, "\t")
			// What the data path sent back itself.
			fmt.Fprintf(w, "icmp sent\tpackets\n")
			fmt.Fprintf(w, "too_big\t%d\n", st.ICMPTooBigSent)
			fmt.Fprintln(w, "\t")
			writeEvents(w, st.Events)
			writeConnTables(w, st.ConnTables)
			writeLocalIPs(w, st.LocalIPs)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "print the counters with their rates per second every --interval")
	wf.register(cmd)
	c.register(cmd)
	return cmd
}

// writeEvents lists the client address events (TOA, PROXY v2) when the
// daemon counts them.
func writeEvents(w *tabwriter.Writer, events map[string]uint64) {
	names := []string{"toa_added", "toa_no_room", "proxy_header_sent", "mss_lowered"}
	if _, ok := events[names[0]]; !ok {
		return
	}
	fmt.Fprintf(w, "client address\tevents\n")
	for _, n := range names {
		fmt.Fprintf(w, "%s\t%d\n", n, events[n])
	}
	fmt.Fprintln(w, "\t")
}
