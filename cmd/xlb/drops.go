// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
)

func newDropsCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	var follow bool
	var reason string
	var count, seconds int
	cmd := &cobra.Command{
		Use:   "drops [--follow [--reason R] [--count N] [--seconds N]]",
		Short: "Show drops by reason, or follow dropped packets as the data path samples them",
		Long: `Without --follow: the drop counters by reason, those above zero.

With --follow: a line per dropped packet, as cilium monitor --type drop
prints them: time, CPU, interface, reason, protocol, source and
destination, length. The data path samples drops only while someone
follows, at most 1000 a second per CPU; with --json each is a JSON object
with the packet's first 128 bytes. It runs until interrupted, --count
packets or --seconds.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl := c.client()
			if !follow {
				if reason != "" || count != 0 || seconds != 0 {
					return usageError{fmt.Errorf("--reason, --count and --seconds go with --follow")}
				}
				st, err := cl.Stats(cmd.Context())
				if err != nil {
					return daemonError(err)
				}
				return writeDropCounts(cmd.OutOrStdout(), st.Drops, g.json)
			}
			if count < 0 || seconds < 0 {
				return usageError{fmt.Errorf("--count and --seconds: want 0 (no limit) or more")}
			}
			q := url.Values{}
			if reason != "" {
				q.Set("reason", reason)
			}
			if count > 0 {
				q.Set("count", strconv.Itoa(count))
			}
			if seconds > 0 {
				q.Set("seconds", strconv.Itoa(seconds))
			}
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			err := cl.FollowDrops(cmd.Context(), q, func(d api.Drop) bool {
				if g.json {
					return enc.Encode(d) == nil
				}
				_, err := fmt.Fprintln(out, dropLine(d))
				return err == nil
			})
			return daemonError(err)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "follow dropped packets as they are sampled")
	f.StringVar(&reason, "reason", "", "only drops of this reason (e.g. no_real)")
	f.IntVar(&count, "count", 0, "stop after this many packets")
	f.IntVar(&seconds, "seconds", 0, "stop after this many seconds")
	c.register(cmd)
	return cmd
}

// dropLine is a followed drop on one line.
func dropLine(d api.Drop) string {
	what := "(no IP header in the sample)"
	if d.Proto != "" {
		what = fmt.Sprintf("%s %s -> %s", d.Proto, d.Src, d.Dst)
		if d.VLAN != 0 {
			what += fmt.Sprintf(" vlan %d", d.VLAN)
		}
	}
	return fmt.Sprintf("%s cpu%d %s %s %s len %d", d.Time.Format("15:04:05.000000"), d.CPU, d.Interface, d.Reason, what, d.Len)
}

// writeDropCounts prints the drop counters above zero, by reason.
func writeDropCounts(w io.Writer, drops map[string]uint64, asJSON bool) error {
	nonZero := map[string]uint64{}
	for k, n := range drops {
		if n > 0 {
			nonZero[k] = n
		}
	}
	if asJSON {
		return json.NewEncoder(w).Encode(nonZero)
	}
	if len(nonZero) == 0 {
		_, err := fmt.Fprintln(w, "no drops")
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(nonZero)) {
		if _, err := fmt.Fprintf(w, "%-20s %d\n", k, nonZero[k]); err != nil {
			return err
		}
	}
	return nil
}
