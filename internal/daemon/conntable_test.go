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

// table is IPv4 counters of a 100-entry table holding n entries (by the
// counters: 1000 inserts, 1000-n removals).
func table(n uint64) datapath.ConnTableStats {
	return datapath.ConnTableStats{Family: datapath.FamilyIPv4, MaxEntries: 100, Inserts: 1000, Removals: 1000 - n}
}

func TestConnTableView(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		walk  *datapath.ConnTableCount // with the counters walkStats
		stats datapath.ConnTableStats
		want  api.ConnTable
	}{
		{name: "no walk: the counters' entries are live",
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 60, Removals: 10, ReplyMisses: 3, ForwardMisses: 4},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 50, LiveEntries: 50, Occupancy: 0.5,
				Inserts: 60, Removals: 10, ReplyMisses: 3, ForwardMisses: 4}},
		{name: "no walk, overfilled: clamped, the excess evicted",
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 250, Removals: 10},
			want:  api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveEntries: 100, Occupancy: 1, Inserts: 250, Removals: 10, Evictions: 140}},
		{name: "more removals than inserts: empty",
			stats: datapath.ConnTableStats{Family: "ipv6", MaxEntries: 100, Inserts: 5, Removals: 8},
			want:  api.ConnTable{Family: "ipv6", MaxEntries: 100, Inserts: 5, Removals: 8}},
		{name: "a walk: its live entries, moved on by the counters since",
			walk:  &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 40},
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 530, Removals: 15},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveEntries: 65, Occupancy: 0.65, LiveCountedAt: &at,
				Inserts: 530, Removals: 15, Evictions: 415}},
		{name: "a walk, then more removals than live entries: none live",
			walk:  &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 2},
			stats: datapath.ConnTableStats{Family: "ipv4", MaxEntries: 100, Inserts: 500, Removals: 20},
			want: api.ConnTable{Family: "ipv4", MaxEntries: 100, Entries: 100, LiveCountedAt: &at,
				Inserts: 500, Removals: 20, Evictions: 390}},
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
	for i, step := range []struct {
		entries uint64 // by the counters, of 100
		walk    *datapath.ConnTableCount
		want    string // the level and message logged, "" for nothing
	}{
		{entries: 50},
		{entries: 90}, // not above 90%
		{entries: 91, want: "level=WARN msg=\"connection table above 90% full"},
		{entries: 99},
		{entries: 85}, // below 90%, not below 80%: still warned
		{entries: 95},
		{entries: 79, want: "level=INFO msg=\"connection table back below 80% full\""},
		{entries: 80},
		{entries: 100, want: "level=WARN"},
		// a walk finds most entries expired: below 80% again
		{entries: 100, walk: &datapath.ConnTableCount{Family: "ipv4", Entries: 100, Live: 30}, want: "level=INFO"},
		{entries: 100},
	} {
		logged.Reset()
		src.stats, src.walk = []datapath.ConnTableStats{table(step.entries)}, nil
		if step.walk != nil {
			src.walk = []datapath.ConnTableCount{*step.walk}
		}
		w.check(src, step.walk != nil, log, time.Now())
		out := logged.String()
		if (step.want == "") != (out == "") || !strings.Contains(out, step.want) {
			t.Fatalf("step %d (%d entries): logged %q, want %q", i, step.entries, out, step.want)
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
			Inserts: 300, Removals: 150, Evictions: 7, ReplyMisses: 3, ForwardMisses: 2},
		{Family: "ipv6", MaxEntries: 100},
	}}, nil
}

func TestConnTableMetrics(t *testing.T) {
	const want = `
# HELP xlb_conntrack_entries Entries the connection table holds by its counters (inserts minus removals, at most its size): live ones and expired ones the LRU has not evicted yet.
# TYPE xlb_conntrack_entries gauge
xlb_conntrack_entries{family="ipv4"} 150
xlb_conntrack_entries{family="ipv6"} 0
# HELP xlb_conntrack_evictions_total Estimated entries the kernel's LRU evicted to make room for new ones.
# TYPE xlb_conntrack_evictions_total counter
xlb_conntrack_evictions_total{family="ipv4"} 7
xlb_conntrack_evictions_total{family="ipv6"} 0
# HELP xlb_conntrack_inserts_total Entries added to the connection table, two per new connection.
# TYPE xlb_conntrack_inserts_total counter
xlb_conntrack_inserts_total{family="ipv4"} 300
xlb_conntrack_inserts_total{family="ipv6"} 0
# HELP xlb_conntrack_live_entries Entries within their timeout: the last walk of the table (every minute or less often) plus the inserts since, minus the removals since.
# TYPE xlb_conntrack_live_entries gauge
xlb_conntrack_live_entries{family="ipv4"} 100
xlb_conntrack_live_entries{family="ipv6"} 0
# HELP xlb_conntrack_max_entries Size of the connection table (two entries per connection).
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
# HELP xlb_conntrack_removals_total Entries xlb deleted itself (connection flushes, on_fail: reset).
# TYPE xlb_conntrack_removals_total counter
xlb_conntrack_removals_total{family="ipv4"} 150
xlb_conntrack_removals_total{family="ipv6"} 0
`
	names := []string{"xlb_conntrack_entries", "xlb_conntrack_evictions_total", "xlb_conntrack_inserts_total",
		"xlb_conntrack_live_entries", "xlb_conntrack_max_entries", "xlb_conntrack_misses_total",
		"xlb_conntrack_occupancy_ratio", "xlb_conntrack_removals_total"}
	c := newCollector(tablesCounters{})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.CollectAndLint(c); err != nil || len(n) > 0 {
		t.Fatalf("lint: %v %v", n, err)
	}
}
