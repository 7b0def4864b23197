// SPDX-License-Identifier: Apache-2.0

package run

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
)

// writeReport writes report.md: the run, the DUTs, the scenario's
// tables, where frames were lost and the charts.
func (r *Results) writeReport(w io.Writer, charts []string) error {
	o := r.Options
	fmt.Fprintf(w, "# xlb bench %s\n\n", r.Scenario)
	if !r.Build.Clean() {
		fmt.Fprintf(w, "> %s: the xlb binary is %s. These figures name no commit: they go in no table of docs/BENCHMARKS.md.\n\n",
			uncleanWarning, unclean(r.Build))
	}
	fmt.Fprintf(w, "`%s`\n\n", r.Command)
	fmt.Fprintf(w, "%s; xlb %s; %s to %s.\n\n", r.Machine.Summary(), r.Revision, r.Started.Format("2006-01-02 15:04:05"), r.Finished.Format("15:04:05"))
	conn := slices.Contains(connScenarios, r.Scenario)
	if conn {
		fmt.Fprintf(w, "Trials of %v, sender CPUs %v, %d reals. XDP endpoints: client in the client namespace, stateless server on every real.\n\n", o.Duration, o.CPUs, o.Reals)
	} else if r.Scenario != "datapath" && r.Scenario != "apply" && r.Scenario != "cluster" {
		loss := "frames the generator sent - frames the sinks on the reals counted"
		if frames.BothWays(r.Scenario, o) {
			loss = "frames the generator sent - answers that came back to the client"
		}
		fmt.Fprintf(w, "Trials of %v, %s frames%s, generator on CPU %v, %d reals. Loss = %s.\n\n",
			o.Duration, o.L4, map[bool]string{true: " over IPv6"}[o.IPv6], o.CPUs, o.Reals, loss)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s.\n\n", n)
	}
	fmt.Fprintln(w, "| DUT | what |\n|---|---|")
	for _, d := range slices.Sorted(maps.Keys(r.DUTs)) {
		fmt.Fprintf(w, "| %s | %s |\n", d, r.DUTs[d])
	}
	fmt.Fprintln(w)
	switch r.Scenario {
	case "pps", "frame-sizes", "rfc2544", "multiflow":
		r.frameReport().WriteTables(w)
	case "cps", "cc", "throughput", "latency", "redis", "http", "synflood":
		if err := r.connReport().WriteTables(w); err != nil {
			return err
		}
	case "apply":
		fmt.Fprintf(w, "## Configuration at scale\n\n%s", r.Apply.Markdown())
	case "cluster":
		fmt.Fprintf(w, "## A cluster of xlb nodes behind an ECMP router\n\nTrials of %v: %d concurrent HTTP streams (kernel sockets, "+
			"GET /stream of 64 MiB again and again), then %d workers opening connections (connect, GET /, reset), from the client "+
			"through the router to the VIP; %d reals; scheduler mh.\n\n%s", o.Duration, o.Streams, r.Cluster.Workers(), o.Reals, r.Cluster.Markdown())
	case "datapath":
		fmt.Fprintf(w, "## Per-packet cost through BPF_PROG_RUN (%d runs per figure), ratios to bare XDP_TX\n\n%s", r.Cost.Repeat, r.Cost.Markdown())
	}
	r.frameReport().WriteLoss(w)
	if len(charts) > 0 {
		fmt.Fprintln(w, "\n## Charts")
		for _, c := range charts {
			fmt.Fprintf(w, "\n![%s](%s)\n", c, c)
		}
	}
	return nil
}
