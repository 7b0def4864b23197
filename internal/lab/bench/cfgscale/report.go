// SPDX-License-Identifier: Apache-2.0

package cfgscale

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The goals of issue 27, for 1000 services: added in under a second, a
// daemon start under two seconds, and a one-service change under 10 ms
// whatever the total.
const (
	goalServices = 1000
	goalAddMs    = 1000
	goalStartMs  = 2000
	goalDiffMs   = 10
)

// Markdown is the table (medians over the trials; the diffs' largest
// too) and the goals, each met or missed and by how much.
func (t *Table) Markdown() string {
	var b strings.Builder
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	fmt.Fprintf(&b, "Medians in ms; services of %d reals each, TCP, wrr; the one-real change is a PUT of one real's weight through the API, "+
		"the whole-file one a POST /v1/apply of the whole file with that change; nft: the same services as DNAT rules "+
		"(`nft -f`, `nft add rule` of one, `nft delete table`), each an nft process.\n\n", t.RealsPerService)
	b.WriteString("| services | reals | xlb start | xlb add all | xlb remove all | xlb one-real change (max) | xlb whole file, one change | nft load all | nft add one rule | nft delete all | add: nft / xlb |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range t.Rows {
		ratio := "-"
		if len(r.NftLoad) > 0 && Median(r.Add) > 0 {
			ratio = fmt.Sprintf("%.2fx", Median(r.NftLoad)/Median(r.Add))
		}
		nft := func(xs []float64) string {
			if len(xs) == 0 {
				return "-"
			}
			return f(Median(xs))
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s |\n", r.Services, r.Reals,
			f(Median(r.Start)), f(Median(r.Add)), f(Median(r.Remove)), f(Median(r.Diff)), f(slices.Max(r.Diff)),
			f(Median(r.FileDiff)), nft(r.NftLoad), nft(r.NftDiff), nft(r.NftFlush), ratio)
	}
	b.WriteString("\n" + t.goals())
	return b.String()
}

// goals says, for each goal, whether it is met and by how much.
func (t *Table) goals() string {
	var b strings.Builder
	b.WriteString("Goals (issue 27):\n\n")
	verdict := func(what string, got, goal float64) {
		if got < goal {
			fmt.Fprintf(&b, "- %s: %.1f ms, met (%.1fx under %v ms)\n", what, got, goal/got, goal)
		} else {
			fmt.Fprintf(&b, "- %s: %.1f ms, **missed** by %.1f ms (goal %v ms)\n", what, got, got-goal, goal)
		}
	}
	i := slices.IndexFunc(t.Rows, func(r Row) bool { return r.Services == goalServices })
	if i >= 0 {
		r := t.Rows[i]
		verdict(fmt.Sprintf("%d services added in one apply", goalServices), Median(r.Add), goalAddMs)
		verdict(fmt.Sprintf("daemon start with %d services", goalServices), Median(r.Start), goalStartMs)
	} else {
		fmt.Fprintf(&b, "- no row of %d services: the add and start goals are not measured\n", goalServices)
	}
	for _, r := range t.Rows {
		verdict(fmt.Sprintf("one-service change with %d services (median; largest %.1f ms)", r.Services, slices.Max(r.Diff)), Median(r.Diff), goalDiffMs)
	}
	most := slices.MaxFunc(t.Rows, func(a, b Row) int { return a.Services - b.Services })
	if most.Services >= 10000 {
		fmt.Fprintf(&b, "- 10k services configurable: met, %d services of %d reals ran\n", most.Services, most.Reals)
	} else {
		fmt.Fprintf(&b, "- 10k services configurable: not measured (largest row %d)\n", most.Services)
	}
	return b.String()
}

// CSVHeader and CSVRows are results.csv: one row per measure and trial.
var CSVHeader = []string{"services", "reals", "measure", "trial", "ms"}

// CSVRows returns results.csv's rows.
func (t *Table) CSVRows() [][]string {
	var out [][]string
	for _, r := range t.Rows {
		for _, m := range []struct {
			name string
			xs   []float64
		}{{"xlb_start", r.Start}, {"xlb_add", r.Add}, {"xlb_remove", r.Remove}, {"xlb_one_real", r.Diff},
			{"xlb_file_one_change", r.FileDiff}, {"nft_load", r.NftLoad}, {"nft_add_rule", r.NftDiff}, {"nft_delete", r.NftFlush}} {
			for i, x := range m.xs {
				out = append(out, []string{strconv.Itoa(r.Services), strconv.Itoa(r.Reals), m.name, strconv.Itoa(i + 1),
					strconv.FormatFloat(x, 'f', 3, 64)})
			}
		}
	}
	return out
}

// Check verifies the table: a row per service count, every measure
// taken.
func (t *Table) Check(services []int, nft bool) error {
	if len(t.Rows) != len(services) {
		return fmt.Errorf("apply: %d rows, want one per service count %v", len(t.Rows), services)
	}
	for i, r := range t.Rows {
		if r.Services != services[i] || len(r.Start) == 0 || len(r.Add) == 0 || len(r.Remove) == 0 || len(r.Diff) == 0 {
			return fmt.Errorf("apply: row %d (%d services) incomplete", i, r.Services)
		}
		if nft && len(r.NftLoad) == 0 {
			return fmt.Errorf("apply: row %d (%d services) has no nft figures", i, r.Services)
		}
	}
	return nil
}
