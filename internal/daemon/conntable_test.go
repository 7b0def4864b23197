// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// fakeTables serves scripted connection-table counters and walks.
type fakeTables struct {
	stats []datapath.ConnTableStats
	walk  []datapath.ConnTableCount
	fail  bool
}

func (f *fakeTables) ConnTableStats() ([]datapath.ConnTableStats, error) {
	if f.fail {
		return nil, errors.New("map read failed")
	}
	return f.stats, nil
}

func (f *fakeTables) CountConnEntries() ([]datapath.ConnTableCount, error) { return f.walk, nil }

func TestConnTableView(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		walk  *datapath.ConnTableCount // with the counters walkStats
		stats datapath.ConnTableStats
		want  api.ConnTable
	}{
		{name: "no walk yet: the counters alone, nothing known live",
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 60, Removals: 10, Refused: 2, ReplyMisses: 3, ForwardMisses: 4},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100,
				Inserts: 60, Removals: 10, Refused: 2, ReplyMisses: 3, ForwardMisses: 4}},
		{name: "a walk: its live entries, moved on by the counters since",
			walk:  &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 40},
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 530, Removals: 15},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveEntries: 65, Occupancy: 0.65, LiveCountedAt: &at,
				Inserts: 530, Removals: 15}},
		{name: "a walk, then more inserts than room: at most the size",
			walk:  &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 90},
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 530, Removals: 10, Refused: 9},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveEntries: 100, Occupancy: 1, LiveCountedAt: &at,
				Inserts: 530, Removals: 10, Refused: 9}},
		{name: "a walk, then more removals than live entries: none live",
			walk:  &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 2},
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 500, Removals: 20},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveCountedAt: &at,
				Inserts: 500, Removals: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tw tableWatch
			if tc.walk != nil {
				// walked with 500 inserts and 10 removals
				tw.walked(datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 500, Removals: 10}, *tc.walk, at)
			}
			got := tw.view(tc.stats)
			if got.LiveCountedAt != nil && tc.want.LiveCountedAt != nil && got.LiveCountedAt.Equal(*tc.want.LiveCountedAt) {
				got.LiveCountedAt = tc.want.LiveCountedAt
			}
			if got != tc.want {
				t.Errorf("view\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestConnTableWarning checks that the warning is logged once per
// crossing of 90%, and again only after the table fell below 80%.
func TestConnTableWarning(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	var w connTableWatch
	src := &fakeTables{}
	stats := []datapath.ConnTableStats{{Family: datapath.FamilyIPv4, MaxEntries: 100, Inserts: 1000}}
	for i, step := range []struct {
		live uint64 // what a walk finds, of 100
		walk bool   // the check walks (else the last walk stands)
		want string // the level and message logged, "" for nothing
	}{
		{live: 50, walk: true},
		{live: 90, walk: true}, // not above 90%
		{live: 91, walk: true, want: "level=WARN msg=\"connection table above 90% full"},
		{live: 99, walk: true},
		{live: 85, walk: true}, // below 90%, not below 80%: still warned
		{live: 95, walk: true},
		{live: 79, walk: true, want: "level=INFO msg=\"connection table back below 80% full\""},
		{live: 80, walk: true},
		{live: 100, walk: true, want: "level=WARN"},
		{live: 30}, // no walk: the last one stands
		{live: 30, walk: true, want: "level=INFO"},
	} {
		logged.Reset()
		src.stats, src.walk = stats, []datapath.ConnTableCount{{Family: "ipv4", Entries: 100, Live: step.live}}
		w.check(src, step.walk, log, time.Now())
		out := logged.String()
		if (step.want == "") != (out == "") || !strings.Contains(out, step.want) {
			t.Fatalf("step %d (%d live): logged %q, want %q", i, step.live, out, step.want)
		}
		if step.want != "" && !strings.Contains(out, "family=ipv4") {
			t.Errorf("step %d: the log does not name the table: %q", i, out)
		}
	}
	src.fail = true
	logged.Reset()
	w.check(src, false, log, time.Now())
	if !strings.Contains(logged.String(), "map read failed") {
		t.Errorf("a failed read logged %q", logged.String())
	}
}

// tablesCounters are fakeCounters with connection tables.
type tablesCounters struct{ fakeCounters }

func (tablesCounters) Stats() (api.Stats, error) {
	return api.Stats{ConnTables: []api.ConnTable{
		{Family: "ipv4", MaxEntries: 200, Entries: 150, LiveEntries: 100, Occupancy: 0.5,
			Inserts: 300, Removals: 150, Refused: 7, ReplyMisses: 3, ForwardMisses: 2},
		{Family: "ipv6", MaxEntries: 100},
	}}, nil
}

func TestConnTableMetrics(t *testing.T) {
	const want = `
# HELP xlb_conntrack_entries Entries the connection table held at its last walk, live ones and expired ones whose slots no new entry has taken yet.
# TYPE xlb_conntrack_entries gauge
xlb_conntrack_entries{family="ipv4"} 150
xlb_conntrack_entries{family="ipv6"} 0
# HELP xlb_conntrack_inserts_total Entries added to the connection table, two per new connection.
# TYPE xlb_conntrack_inserts_total counter
xlb_conntrack_inserts_total{family="ipv4"} 300
xlb_conntrack_inserts_total{family="ipv6"} 0
# HELP xlb_conntrack_live_entries Entries within their timeout: the last walk of the table (every minute or less often) plus the inserts since, minus the removals since.
# TYPE xlb_conntrack_live_entries gauge
xlb_conntrack_live_entries{family="ipv4"} 100
xlb_conntrack_live_entries{family="ipv6"} 0
# HELP xlb_conntrack_max_entries Entries the connection table is sized for: two per connection of its configured size.
# TYPE xlb_conntrack_max_entries gauge
xlb_conntrack_max_entries{family="ipv4"} 200
xlb_conntrack_max_entries{family="ipv6"} 100
# HELP xlb_conntrack_misses_total Packets that found no entry where their connection's should be: direction reply (to a local IP's port range) or forward (TCP other than a SYN to a service).
# TYPE xlb_conntrack_misses_total counter
xlb_conntrack_misses_total{direction="forward",family="ipv4"} 2
xlb_conntrack_misses_total{direction="forward",family="ipv6"} 0
xlb_conntrack_misses_total{direction="reply",family="ipv4"} 3
xlb_conntrack_misses_total{direction="reply",family="ipv6"} 0
# HELP xlb_conntrack_occupancy_ratio Live entries over the table's size; the daemon warns above 0.9.
# TYPE xlb_conntrack_occupancy_ratio gauge
xlb_conntrack_occupancy_ratio{family="ipv4"} 0.5
xlb_conntrack_occupancy_ratio{family="ipv6"} 0
# HELP xlb_conntrack_refused_total New connections refused for want of a free slot (dropped as conn_table_full).
# TYPE xlb_conntrack_refused_total counter
xlb_conntrack_refused_total{family="ipv4"} 7
xlb_conntrack_refused_total{family="ipv6"} 0
# HELP xlb_conntrack_removals_total Entries xlb deleted itself (connection flushes, on_fail: reset).
# TYPE xlb_conntrack_removals_total counter
xlb_conntrack_removals_total{family="ipv4"} 150
xlb_conntrack_removals_total{family="ipv6"} 0
`
	names := []string{"xlb_conntrack_entries", "xlb_conntrack_inserts_total",
		"xlb_conntrack_live_entries", "xlb_conntrack_max_entries", "xlb_conntrack_misses_total",
		"xlb_conntrack_occupancy_ratio", "xlb_conntrack_refused_total", "xlb_conntrack_removals_total"}
	c := newCollector(tablesCounters{})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.CollectAndLint(c); err != nil || len(n) > 0 {
		t.Fatalf("lint: %v %v", n, err)
	}
}
