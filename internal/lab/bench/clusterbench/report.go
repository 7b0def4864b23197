// SPDX-License-Identifier: Apache-2.0

package clusterbench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/cluster"
)

// Markdown is the table: per node count, the streams' aggregate rate and
// the new connections' rate, each with its spread over the nodes and its
// ratio to the one-node row.
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| nodes | streams | Gbit/s | vs 1 node | streams per node | spread | conn/s | vs 1 node | errors | conns per node | spread | synced | sync dropped |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var base *Row
	for i, r := range t.Rows {
		if r.Nodes == 1 && !r.NoSync {
			base = &t.Rows[i]
		}
	}
	ratio := func(x float64, of func(Row) float64) string {
		if base == nil || of(*base) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", x/of(*base))
	}
	for _, r := range t.Rows {
		nodes := strconv.Itoa(r.Nodes)
		if r.NoSync {
			nodes += ", no sync"
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %s | %s | %.0f | %s | %d | %s | %s | %d | %d |\n", nodes, r.Streams, r.Gbps(),
			ratio(r.Gbps(), Row.Gbps), shares(r.StreamsPerNode), spread(r.StreamsPerNode, r.Nodes), r.CPS(), ratio(r.CPS(), Row.CPS),
			r.ConnErrors, shares(r.ConnsPerNode), spread(r.ConnsPerNode, r.Nodes), r.Synced, r.SyncDropped)
	}
	b.WriteString("\nSpread: the busiest node's share over the idlest's (1.00: even; a node that got nothing: inf). ")
	b.WriteString("Router: " + t.FRR + ", ECMP with the L4 hash (fib_multipath_hash_policy=1).\n")
	for _, r := range t.Rows {
		if len(r.ConnErrorSamples) > 0 {
			fmt.Fprintf(&b, "\nErrors of the %d-node row (first %d): %s\n", r.Nodes, len(r.ConnErrorSamples), strings.Join(r.ConnErrorSamples, "; "))
		}
	}
	if len(t.Changes) > 0 {
		fmt.Fprintf(&b, "\n### Established connections through node changes (%d nodes)\n\n", t.ChangesNodes)
		b.WriteString("Held connections ask for / every 100 ms on their keep-alive connection; one that errs, or is answered by " +
			"another real or local IP than at first, is broken. add: the last node starts (it announces the VIP once the others' " +
			"connections are in); drain: `xlb node drain` on node1; kill: node2 goes silent at the router (no FIN), then its daemon is killed.\n\n")
		b.WriteString("| change | held | broken | broken % | longest stall | new connections back after | new connections failed |\n|---|---|---|---|---|---|---|\n")
		for _, ch := range t.Changes {
			back, failed := "-", "-"
			if ch.Change == "kill" {
				back, failed = ch.NewConnsBack.Round(time.Millisecond).String(), strconv.Itoa(ch.NewConnsFailed)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f%% | %v | %s | %s |\n", ch.Change, ch.Held, ch.Broken,
				100*float64(ch.Broken)/float64(max(ch.Held, 1)), ch.MaxStall.Round(time.Millisecond), back, failed)
		}
		fmt.Fprintf(&b, "\nGoals (issue 28): none broken on add and drain; on a kill at most those not yet synced; new connections "+
			"back after the router's hold time (%v in the lab).\n", cluster.RouterHold)
	}
	return b.String()
}

// Workers is the CPS trial's concurrency (the rows').
func (t *Table) Workers() int {
	if len(t.Rows) == 0 {
		return 0
	}
	return t.Rows[0].Workers
}

// shares writes counts by node as percentages.
func shares(m map[string]int) string {
	total := 0
	for _, v := range m {
		total += v
	}
	if total == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*float64(m[k])/float64(total)))
	}
	return strings.Join(parts, ", ")
}

// spread is the largest count over the smallest, over nodes nodes.
func spread(m map[string]int, nodes int) string {
	if len(m) == 0 {
		return "-"
	}
	lo, hi := -1, 0
	for i := 1; i <= nodes; i++ {
		v := m["node"+strconv.Itoa(i)]
		hi = max(hi, v)
		if lo < 0 || v < lo {
			lo = v
		}
	}
	if lo == 0 {
		return "inf"
	}
	return fmt.Sprintf("%.2f", float64(hi)/float64(lo))
}

// CSVHeader and CSVRows are results.csv: one row per node count.
var CSVHeader = []string{"nodes", "sync", "streams", "stream_bytes", "stream_seconds", "gbps", "workers", "conns", "conn_errors", "conn_seconds", "cps",
	"streams_per_node", "conns_per_node", "synced", "sync_dropped"}

// CSVRows returns results.csv's rows.
func (t *Table) CSVRows() [][]string {
	var out [][]string
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	for _, r := range t.Rows {
		out = append(out, []string{strconv.Itoa(r.Nodes), strconv.FormatBool(!r.NoSync), strconv.Itoa(r.Streams), u(r.StreamBytes), f(r.StreamSecs), f(r.Gbps()),
			strconv.Itoa(r.Workers), u(r.Conns), u(r.ConnErrors), f(r.ConnSecs), f(r.CPS()),
			shares(r.StreamsPerNode), shares(r.ConnsPerNode), u(r.Synced), u(r.SyncDropped)})
	}
	return out
}

// Check verifies the table: a row per node count (and one without sync
// for the most nodes, above one), each measured.
func (t *Table) Check(nodes []int) error {
	want := len(nodes)
	if slices.Max(nodes) > 1 {
		want++
	}
	if len(t.Rows) != want {
		return fmt.Errorf("cluster: %d rows, want %d: one per node count %v and one without sync", len(t.Rows), want, nodes)
	}
	for i, r := range t.Rows {
		if (i < len(nodes) && r.Nodes != nodes[i]) || r.StreamBytes == 0 || r.Conns == 0 || r.StreamSecs <= 0 || r.ConnSecs <= 0 {
			return fmt.Errorf("cluster: row %d (%d nodes) incomplete", i, r.Nodes)
		}
	}
	return nil
}

// Charts draws throughput and connection rate by node count.
func (t *Table) Charts(dir string) ([]string, error) {
	var gbps, cps plotter.XYs
	for _, r := range t.Rows {
		if r.NoSync {
			continue
		}
		gbps = append(gbps, plotter.XY{X: float64(r.Nodes), Y: r.Gbps()})
		cps = append(cps, plotter.XY{X: float64(r.Nodes), Y: r.CPS()})
	}
	var out []string
	f, err := bench.Chart(dir, "cluster-throughput", "Aggregate throughput of the streams by node count", "nodes", "Gbit/s", false,
		[]bench.Series{{Name: "xlb cluster", Pts: gbps}})
	if err != nil {
		return out, err
	}
	out = append(out, f)
	f, err = bench.Chart(dir, "cluster-cps", "New connections per second by node count", "nodes", "connections/s", false,
		[]bench.Series{{Name: "xlb cluster", Pts: cps}})
	if f != "" {
		out = append(out, f)
	}
	return out, err
}
