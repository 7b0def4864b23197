// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// The connection tables' watch. A table never evicts: a full one refuses
// new connections (counted) and keeps the established ones. The data
// path reuses an expired entry's slot without telling anyone, so the
// counters cannot say how full a table is; the watch reads them every
// tick and walks the tables now and then (a walk reads the table's own
// mapping) to count the live entries. It logs a warning when the live
// entries pass connTableWarnAbove of what a table is sized for, once, and
// again only after they fell below connTableClearBelow.
const (
	connTableTick = 10 * time.Second // counters read, warning checked
	// A walk reads the first word of every slot: tens of milliseconds
	// per million slots. Walks are connTableWalkEvery apart at least, and
	// at least connTableWalkShare times as long as the last one took, so
	// that they never take more than 2% of one CPU however large the
	// tables.
	connTableWalkEvery  = time.Minute
	connTableWalkShare  = 50
	connTableWarnAbove  = 0.90
	connTableClearBelow = 0.80
)

// connTableSource is what the watch reads: the data path.
type connTableSource interface {
	ConnTableStats() ([]datapath.ConnTableStats, error)
	CountConnEntries() ([]datapath.ConnTableCount, error)
}

// connTableWatch keeps what the watch knows of each table, by family.
// The zero value is ready.
type connTableWatch struct {
	mu     sync.Mutex
	tables map[string]*tableWatch
}

// tableWatch is what the watch knows of one table.
type tableWatch struct {
	walkedAt          time.Time // zero: never walked
	walk              datapath.ConnTableCount
	inserts, removals uint64 // the counters when it walked
	warned            bool   // above connTableWarnAbove, not yet below connTableClearBelow
}

func (w *connTableWatch) table(family string) *tableWatch {
	if w.tables == nil {
		w.tables = map[string]*tableWatch{}
	}
	t, ok := w.tables[family]
	if !ok {
		t = &tableWatch{}
		w.tables[family] = t
	}
	return t
}

// walked records a walk of the table and the counters read just before
// it.
func (t *tableWatch) walked(s datapath.ConnTableStats, c datapath.ConnTableCount, at time.Time) {
	t.walkedAt, t.walk, t.inserts, t.removals = at, c, s.Inserts, s.Removals
}

// view is the table as the API shows it: the counters, with the live
// entries of the last walk moved on by the inserts and removals since.
func (t *tableWatch) view(s datapath.ConnTableStats) api.ConnTable {
	v := api.ConnTable{Family: s.Family, MaxEntries: s.MaxEntries, Connections: s.Conns, MemoryBytes: s.Bytes, Entries: t.walk.Entries,
		Inserts: s.Inserts, Removals: s.Removals, Refused: s.Refused, HalfOpenDrops: s.HalfOpenDrops,
		ReplyMisses: s.ReplyMisses, ForwardMisses: s.ForwardMisses}
	if !t.walkedAt.IsZero() {
		at := t.walkedAt
		v.LiveCountedAt = &at
		live := int64(t.walk.Live) + since(s.Inserts, t.inserts) - since(s.Removals, t.removals)
		v.LiveEntries = uint64(min(max(live, 0), int64(s.MaxEntries)))
	}
	if s.MaxEntries > 0 {
		v.Occupancy = float64(v.LiveEntries) / float64(s.MaxEntries)
	}
	return v
}

// since is how much a counter grew from then to now.
func since(now, then uint64) int64 {
	if now < then {
		return 0
	}
	return int64(now - then)
}

// crossed moves the warning state on with an occupancy: it returns +1
// when the table went above connTableWarnAbove, -1 when it went back
// below connTableClearBelow, else 0.
func (t *tableWatch) crossed(occupancy float64) int {
	switch {
	case !t.warned && occupancy > connTableWarnAbove:
		t.warned = true
		return 1
	case t.warned && occupancy < connTableClearBelow:
		t.warned = false
		return -1
	}
	return 0
}

// check reads the counters, walks the tables when walk is set, and logs
// the tables that crossed a threshold.
func (w *connTableWatch) check(src connTableSource, walk bool, log *slog.Logger, now time.Time) {
	stats, err := src.ConnTableStats()
	if err != nil {
		log.Warn("read the connection tables' counters", "err", err)
		return
	}
	var counts []datapath.ConnTableCount
	if walk {
		if counts, err = src.CountConnEntries(); err != nil {
			log.Warn("count the connection tables' entries", "err", err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range stats {
		t := w.table(s.Family)
		if i < len(counts) {
			t.walked(s, counts[i], now)
		}
		v := t.view(s)
		attrs := []any{"family", v.Family, "live_entries", v.LiveEntries, "max_entries", v.MaxEntries,
			"occupancy", v.Occupancy, "refused", v.Refused, "misses", v.ReplyMisses + v.ForwardMisses}
		switch t.crossed(v.Occupancy) {
		case 1:
			log.Warn("connection table above 90% full: once full, new connections are refused (dropped as "+
				"conn_table_full) and the established ones kept (docs/operator-guide.md, Connection table full)", attrs...)
		case -1:
			log.Info("connection table back below 80% full", attrs...)
		}
	}
}

// views returns both tables as the API shows them, from fresh counters.
func (w *connTableWatch) views(src connTableSource) ([]api.ConnTable, error) {
	stats, err := src.ConnTableStats()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]api.ConnTable, 0, len(stats))
	for _, s := range stats {
		out = append(out, w.table(s.Family).view(s))
	}
	return out, nil
}

// connTableLoop checks the tables every connTableTick, walking them as
// often as connTableWalkEvery and connTableWalkShare allow (the first
// check walks), until ctx ends.
func (d *Daemon) connTableLoop(ctx context.Context) {
	tick := time.NewTicker(connTableTick)
	defer tick.Stop()
	var nextWalk time.Time
	for {
		start := time.Now()
		walk := !start.Before(nextWalk)
		d.conntable.check(d.dp, walk, d.log, start)
		if walk {
			nextWalk = start.Add(max(connTableWalkEvery, connTableWalkShare*time.Since(start)))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// connTableMetrics are the tables' Prometheus metrics, labelled by family.
type connTableMetrics struct {
	maxEntries, entries, live, occupancy *prometheus.Desc
	size, memory                         *prometheus.Desc
	inserts, removals, refused, misses   *prometheus.Desc
	halfOpenDrops                        *prometheus.Desc
}

func newConnTableMetrics() connTableMetrics {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("xlb_conntrack_"+name, help, append([]string{"family"}, labels...), nil)
	}
	return connTableMetrics{
		maxEntries: desc("max_entries", "Entries the connection table is sized for: two per connection of its configured size."),
		size:       desc("size_connections", "Connections the table is sized for (conn_table in the configuration)."),
		memory:     desc("memory_bytes", "Memory the table's slots take, allocated when the data path is loaded."),
		entries: desc("entries", "Entries the connection table held at its last walk, live ones and expired ones "+
			"whose slots no new entry has taken yet."),
		live: desc("live_entries", "Entries within their timeout: the last walk of the table (every minute or "+
			"less often) plus the inserts since, minus the removals since."),
		occupancy: desc("occupancy_ratio", "Live entries over the table's size; the daemon warns above 0.9."),
		inserts:   desc("inserts_total", "Entries added to the connection table, two per new connection."),
		removals:  desc("removals_total", "Entries xlb deleted itself (connection flushes, on_fail: reset)."),
		refused:   desc("refused_total", "New connections refused for want of a free slot (dropped as conn_table_full)."),
		halfOpenDrops: desc("half_open_drops_total", "Half-open connections (the client's acknowledgement never came, "+
			"idle 2 s or more) whose place a new connection took for want of a free slot."),
		misses: desc("misses_total", "Packets that found no entry where their connection's should be: "+
			"direction reply (to a local IP's port range) or forward (TCP other than a SYN to a service).", "direction"),
	}
}

func (m connTableMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.maxEntries, m.size, m.memory, m.entries, m.live, m.occupancy, m.inserts, m.removals, m.refused, m.halfOpenDrops, m.misses} {
		ch <- d
	}
}

func (m connTableMetrics) collect(ch chan<- prometheus.Metric, tables []api.ConnTable) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	for _, t := range tables {
		f := t.Family
		metric(m.maxEntries, prometheus.GaugeValue, float64(t.MaxEntries), f)
		metric(m.size, prometheus.GaugeValue, float64(t.Connections), f)
		metric(m.memory, prometheus.GaugeValue, float64(t.MemoryBytes), f)
		metric(m.entries, prometheus.GaugeValue, float64(t.Entries), f)
		metric(m.live, prometheus.GaugeValue, float64(t.LiveEntries), f)
		metric(m.occupancy, prometheus.GaugeValue, t.Occupancy, f)
		metric(m.inserts, prometheus.CounterValue, float64(t.Inserts), f)
		metric(m.removals, prometheus.CounterValue, float64(t.Removals), f)
		metric(m.refused, prometheus.CounterValue, float64(t.Refused), f)
		metric(m.halfOpenDrops, prometheus.CounterValue, float64(t.HalfOpenDrops), f)
		metric(m.misses, prometheus.CounterValue, float64(t.ReplyMisses), f, "reply")
		metric(m.misses, prometheus.CounterValue, float64(t.ForwardMisses), f, "forward")
	}
}
