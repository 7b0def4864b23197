// SPDX-License-Identifier: Apache-2.0

package listing

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
)

// Reading is what xlb top and xlb stats --watch read from the daemon at
// one time.
type Reading struct {
	At       time.Time
	Services []api.Service
	Stats    api.Stats
}

// WriteTop prints one frame of xlb top: per service and real, the
// connections, packets and bytes per second between prev and cur, the
// active and inactive connections and the health; then the drops per
// second by reason (the most first) and the tables' occupancy.
func WriteTop(w io.Writer, prev, cur Reading) error {
	interval := cur.At.Sub(prev.At)
	var b strings.Builder
	fmt.Fprintf(&b, "xlb top, %s, rates over %s\n\n", cur.At.Format("15:04:05"), interval.Round(time.Millisecond))
	fmt.Fprintf(&b, "%-33s %8s %9s %9s %10s %10s %9s %9s  %s\n", "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS", "ActConn", "InActConn", "Health")
	for _, r := range rateRows(prev.Services, cur.Services, interval) {
		act, inact, health := "", "", ""
		if r.real != nil {
			act, inact, health = fmt.Sprint(r.real.ActiveConns), fmt.Sprint(r.real.InactiveConns), healthCell(*r.real)
			if r.real.Weight == 0 && health == "-" {
				health = "drained"
			}
		}
		fmt.Fprintf(&b, "%-33s %8d %9d %9d %10d %10d %9s %9s  %s\n", r.name, r.rates.Conns, r.rates.InPackets, r.rates.OutPackets,
			r.rates.InBytes, r.rates.OutBytes, act, inact, health)
	}
	b.WriteString("\n" + dropRates(prev.Stats.Drops, cur.Stats.Drops, interval) + "\n")
	var tables []string
	for _, t := range cur.Stats.ConnTables {
		tables = append(tables, fmt.Sprintf("%s %.1f%% (%d of %d entries)", t.Family, 100*t.Occupancy, t.LiveEntries, t.MaxEntries))
	}
	fmt.Fprintf(&b, "conn tables: %s\n", strings.Join(tables, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

// dropRates says the drops per second by reason between two readings,
// the most first, or that there were none.
func dropRates(prev, cur map[string]uint64, interval time.Duration) string {
	type rate struct {
		reason string
		n      float64
	}
	var rates []rate
	for _, reason := range slices.Sorted(maps.Keys(cur)) {
		if n := perSecond(prev[reason], cur[reason], interval); n > 0 {
			rates = append(rates, rate{reason, n})
		}
	}
	if len(rates) == 0 {
		return "drops/s: none"
	}
	slices.SortStableFunc(rates, func(a, b rate) int { return cmp.Compare(b.n, a.n) })
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmt.Sprintf("%s %.0f", r.reason, r.n)
	}
	return "drops/s: " + strings.Join(parts, ", ")
}

// WriteStatsDelta prints xlb stats --watch's frame: every verdict and
// drop reason with its total and its rate per second since prev.
func WriteStatsDelta(w io.Writer, prev, cur Reading) error {
	interval := cur.At.Sub(prev.At)
	var b strings.Builder
	fmt.Fprintf(&b, "xlb stats, %s, rates over %s\n", cur.At.Format("15:04:05"), interval.Round(time.Millisecond))
	for _, part := range []struct {
		title     string
		prev, cur map[string]uint64
	}{{"verdict", prev.Stats.Verdicts, cur.Stats.Verdicts}, {"drop reason", prev.Stats.Drops, cur.Stats.Drops}, {"event", prev.Stats.Events, cur.Stats.Events}} {
		fmt.Fprintf(&b, "\n%-24s %14s %12s\n", part.title, "total", "per second")
		for _, k := range slices.Sorted(maps.Keys(part.cur)) {
			fmt.Fprintf(&b, "%-24s %14d %12.0f\n", k, part.cur[k], perSecond(part.prev[k], part.cur[k], interval))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
