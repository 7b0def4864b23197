// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost/baseline"
	"github.com/xlb-dev/xlb/internal/lab/bench/dpcost/progbench"
	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// roundsPerFigure is how many times each figure is measured; the least
// counts.
const roundsPerFigure = 3

// Options configure Measure.
type Options struct {
	Conns  []int    // connection-table sizes (default 1k, 10k, 100k, 1M, 10M; 10M needs 2.1 GiB)
	Repeat int      // runs per figure (default 1M)
	Rows   []string // only these rows: pass, new, fwd, rev, partial, drop (default all)
	// Namespace names the network namespace the measurement builds
	// (default xlbcost-PID); it is removed at the end.
	Namespace string
}

// Row is one table size's figures, in ns per packet.
type Row struct {
	Conns     int     `json:"conns"`
	PassNs    float64 `json:"pass_ns"`              // traffic not for a VIP
	NewNs     float64 `json:"new_ns"`               // a SYN of a connection never seen
	FwdNs     float64 `json:"established_fwd_ns"`   // client -> real, established
	FwdHoldNs float64 `json:"established_first_ns"` // the same, first packet in a 16 s hold period
	RevNs     float64 `json:"established_rev_ns"`   // real -> client
	// PartialNs is client -> real, established, for a 128-byte frame
	// whose TCP checksum is partial (a sender with checksum offload):
	// its segment is summed whole
	PartialNs float64 `json:"established_partial_csum_ns"`
	// DropNs is an ACK of no connection, dropped (tcp_not_syn), nobody
	// following drops; DropRecordedNs the same with the drop recorder
	// on (xlb drops --follow), its budget of samples spent within the
	// first 1000 packets of each second
	DropNs         float64 `json:"drop_ns"`
	DropRecordedNs float64 `json:"drop_recorded_ns"`
	Ct4Bytes       uint64  `json:"ct4_bytes"` // the IPv4 table sized for Conns connections
	// PutRefused counts the connections of the fill that found their
	// probe full (the table is sized for Conns)
	PutRefused int `json:"put_refused"`
	// FwdHomePair is the share of the forward entries in their home
	// pair (128 bytes, read first) and FwdPairs the mean pairs a
	// client->real lookup reads, from a walk of the filled table
	FwdHomePair float64 `json:"fwd_in_home_pair"`
	FwdPairs    float64 `json:"fwd_pairs_per_lookup"`
	// NewStages are where a new connection's time goes, timed by a
	// program of its own (datapath.Options.TimeStages) on a table of
	// the same size
	NewStages *datapath.NewConnStages `json:"new_stages,omitempty"`
}

// Table is the measurement: the XDP_TX baseline and a row per size.
type Table struct {
	TxNs      float64 `json:"xdp_tx_ns"`       // bare XDP_TX through the harness
	TxAloneNs float64 `json:"xdp_tx_alone_ns"` // and without the harness
	Repeat    int     `json:"repeat"`
	Rows      []Row   `json:"rows"`
}

// Measure measures the data path's per-packet cost for each table
// size; progress, when not nil, hears of each row.
func Measure(o Options, progress func(string)) (Table, error) {
	if len(o.Conns) == 0 {
		o.Conns = []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
	}
	if o.Repeat == 0 {
		o.Repeat = 1_000_000
	}
	if o.Namespace == "" {
		o.Namespace = fmt.Sprintf("xlbcost-%d", os.Getpid())
	}
	want := func(kind string) bool { return len(o.Rows) == 0 || strings.Contains(strings.Join(o.Rows, ","), kind) }
	table := Table{Repeat: o.Repeat}
	tx, err := baseline.LoadXDPTx()
	if err != nil {
		return table, err
	}
	defer tx.Close()
	h, err := progbench.Load()
	if err != nil {
		return table, err
	}
	defer h.Close()
	for _, n := range o.Conns {
		row, err := measureRow(o, n, tx, h, &table, want)
		if err != nil {
			return table, fmt.Errorf("%d connections: %w", n, err)
		}
		table.Rows = append(table.Rows, row)
		if progress != nil {
			progress(fmt.Sprintf("%d connections (%d found no room): established %.1f ns, new %.1f ns (XDP_TX %.1f ns)", n, row.PutRefused, row.FwdNs, row.NewNs, table.TxNs))
		}
	}
	return table, nil
}

func measureRow(o Options, n int, tx *ebpf.Program, h *progbench.Harness, table *Table, want func(string) bool) (Row, error) {
	row := Row{Conns: n}
	// the established figures on a table sized for exactly n connections
	// and filled with them, as an operator sizes a table for the peak
	if err := measureKinds(o, n, n, false, tx, h, table, &row, func(k string) bool { return k != "new" && want(k) }); err != nil {
		return row, err
	}
	if !want("new") {
		return row, nil
	}
	// a new connection on a table with room for every one the rounds
	// open, twice over: a table near its size refuses a few
	// (docs/operator-guide.md, "Connection table full")
	room := n + 2*(roundsPerFigure+1)*o.Repeat
	if err := measureKinds(o, n, room, false, tx, h, table, &row, func(k string) bool { return k == "new" }); err != nil {
		return row, err
	}
	// and again with the stages timed, in a program of its own
	return row, measureKinds(o, n, room, true, tx, h, table, &row, func(k string) bool { return k == "new" })
}

// measureKinds fills a table sized for size connections with n and
// measures the kinds want takes into row; timed, it measures where the
// new connections' time goes instead (row.NewStages). The table sized
// for n gives the row its memory.
func measureKinds(o Options, n, size int, timed bool, tx *ebpf.Program, h *progbench.Harness, table *Table, row *Row, want func(string) bool) error {
	if err := checkTables(uint32(size)); err != nil {
		return err
	}
	e, err := newEnv(o.Namespace, datapath.Options{Conns4: uint32(size), TimeStages: timed})
	if err != nil {
		return err
	}
	defer e.Close()
	// the table's clients are reached through the client side
	if err := e.IP("route", "add", "10.128.0.0/16", "via", progns.Client4.String(), "dev", progns.ClientIf); err != nil {
		return err
	}
	// 10 reals and 8 local IPs: room for 5M new connections at once
	key := loadbalancer.ServiceKey{VIP: progns.VIP4, Port: 80, Proto: loadbalancer.TCP}
	var laddrs []netip.Addr
	for i := 0; i < 8; i++ {
		laddrs = append(laddrs, netip.AddrFrom4([4]byte{10, 0, 2, byte(254 - i)}))
	}
	if err := e.dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.MaglevHash, LocalIPs: laddrs}); err != nil {
		return err
	}
	var reals []loadbalancer.Real
	for i := 1; i <= progns.NumReals; i++ {
		reals = append(reals, loadbalancer.Real{Addr: progns.RealAddr(false, i), Port: 80, Weight: 1})
	}
	if err := e.dp.SetReals(key, reals); err != nil {
		return err
	}
	// seen last in the previous hold period (XLB_CT_HOLD_PERIOD, 16 s):
	// the first packet of each flow refreshes its reverse entry
	real1 := netip.AddrPortFrom(reals[0].Addr, reals[0].Port)
	conns := func(i int) datapath.EstablishedConn {
		client, local := conn(i)
		return datapath.EstablishedConn{Client: client, Real: real1, Local: local}
	}
	// each measured flow is the first connection of its stride that
	// the table took (a few find their probe full, as new connections
	// would be refused)
	flows, stride := measuredFlows(n)
	e.flowConns, e.locals = make([]int, flows), make([]netip.AddrPort, flows)
	placed := func(i int, local netip.AddrPort) {
		if j := i / stride; j < flows && !e.locals[j].IsValid() {
			e.flowConns[j], e.locals[j] = i, local
		}
	}
	put, err := e.dp.PutConns(key, n, 16*time.Second, conns, placed)
	if err != nil {
		return err
	}
	if size == n {
		row.PutRefused = n - put
		depths, err := e.dp.ConnTableDepths()
		if err != nil {
			return err
		}
		if d := depths[0]; d.Forward > 0 {
			row.FwdHomePair, row.FwdPairs = float64(d.ByPair[0])/float64(d.Forward), d.MeanPairs()
		}
	}
	// a stride none of whose connections found room (one connection per
	// stride at small sizes) sends as the flow before it, or after it
	for j := range e.locals {
		for d := 1; !e.locals[j].IsValid() && d < flows; d++ {
			for _, k := range []int{j - d, j + d} {
				if k >= 0 && k < flows && e.locals[k].IsValid() && !e.locals[j].IsValid() {
					e.flowConns[j], e.locals[j] = e.flowConns[k], e.locals[k]
				}
			}
		}
		if !e.locals[j].IsValid() {
			return fmt.Errorf("none of %d connections found room in the table", n)
		}
	}
	// each figure is the least of roundsPerFigure means: interference from
	// the rest of the machine only ever adds time
	measure := func(prog *ebpf.Program, r progbench.Run, rounds int) (float64, datapath.Verdict, error) {
		best := time.Duration(1<<63 - 1)
		var (
			ret uint32
			err error
		)
		for range rounds {
			var d time.Duration
			e.Do(func() { d, ret, err = h.Measure(prog, r) })
			if err != nil {
				return 0, 0, err
			}
			best = min(best, d)
		}
		return float64(best.Nanoseconds()), datapath.Verdict(ret), nil
	}
	if table.TxNs == 0 {
		if table.TxNs, _, err = measure(tx, e.run(n, o.Repeat, "fwd"), roundsPerFigure); err != nil {
			return err
		}
		for i := range roundsPerFigure {
			e.Do(func() {
				var d time.Duration
				_, d, err = tx.Benchmark(make([]byte, progbench.FrameLen), o.Repeat, nil)
				if ns := float64(d.Nanoseconds()); i == 0 || ns < table.TxAloneNs {
					table.TxAloneNs = ns
				}
			})
			if err != nil {
				return err
			}
		}
	}
	for _, m := range []struct {
		kind   string
		dst    *float64
		want   datapath.Verdict
		rounds int
	}{
		{"pass", &row.PassNs, datapath.XDPPass, roundsPerFigure},
		// first packet of each flow in this 16 s period (once: a second
		// round would find the reverse entries refreshed), then again
		{"fwd", &row.FwdHoldNs, datapath.XDPRedirect, 1},
		{"fwd", &row.FwdNs, datapath.XDPRedirect, roundsPerFigure},
		{"rev", &row.RevNs, datapath.XDPRedirect, roundsPerFigure},
		{"partial", &row.PartialNs, datapath.XDPRedirect, roundsPerFigure},
		{"drop", &row.DropNs, datapath.XDPDrop, roundsPerFigure},
		{"drop-recorded", &row.DropRecordedNs, datapath.XDPDrop, roundsPerFigure},
		{"new", &row.NewNs, datapath.XDPRedirect, roundsPerFigure},
	} {
		if !want(strings.TrimSuffix(m.kind, "-recorded")) {
			continue
		}
		kind := m.kind
		if kind == "drop-recorded" {
			// the recorder on, as while someone follows drops: a few
			// samples, then the budget check alone
			if err := e.dp.SetDropRecorder(true); err != nil {
				return err
			}
			kind = "drop"
		}
		if timed {
			if err := e.dp.ResetStages(); err != nil {
				return err
			}
			if _, _, err := measure(e.dp.Program(), e.run(n, o.Repeat, m.kind), 1); err != nil {
				return err
			}
			st, err := e.dp.NewConnStages()
			if err != nil {
				return err
			}
			row.NewStages = &st
			continue
		}
		ns, v, err := measure(e.dp.Program(), e.run(n, o.Repeat, kind), m.rounds)
		if kind != m.kind {
			err = errors.Join(err, e.dp.SetDropRecorder(false))
		}
		if err != nil {
			return err
		}
		if v != m.want {
			return fmt.Errorf("%s: verdict %s, want %s", m.kind, v, m.want)
		}
		*m.dst = ns
	}
	if size == n {
		if row.Ct4Bytes, err = e.dp.ConnTable4Bytes(); err != nil {
			return err
		}
	}
	return nil
}

// Markdown renders the table as docs/BENCHMARKS.md shows it.
func (t Table) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "bare XDP_TX through the harness: %.1f ns/packet (alone, no harness: %.1f ns)\n\n", t.TxNs, t.TxAloneNs)
	sb.WriteString("| connections | non-VIP pass | new connection | established client->real | client->real, first in 16 s | established real->client | client->real, partial checksum (128 B frame) | drop (tcp_not_syn) | drop, recorder on | IPv4 table for n connections | per connection | left out of the fill | client->real entries in their home pair | 128-byte pairs per client->real lookup |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	r := func(ns float64) string { return fmt.Sprintf("%.1f ns (%.2fx)", ns, ns/t.TxNs) }
	for _, row := range t.Rows {
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f MiB | %.0f B | %d | %.1f%% | %.2f |\n", row.Conns, r(row.PassNs), r(row.NewNs), r(row.FwdNs), r(row.FwdHoldNs), r(row.RevNs), r(row.PartialNs), r(row.DropNs), r(row.DropRecordedNs),
			float64(row.Ct4Bytes)/(1<<20), float64(row.Ct4Bytes)/float64(row.Conns), row.PutRefused, 100*row.FwdHomePair, row.FwdPairs)
	}
	if len(t.Rows) > 0 && t.Rows[0].NewStages != nil {
		sb.WriteString("\nWhere a new connection's time goes (a program of its own reads the clock at the end of each stage: " +
			"each figure includes one reading, the timer column):\n\n")
		sb.WriteString("| connections | parse, service, forward probe | scheduler | local IP, forward slot | local port, reverse slot | " +
			"entries written | NAT, route, redirect | timer | sum | new connection, untimed |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		ns := func(d time.Duration) string { return fmt.Sprintf("%d ns", d.Nanoseconds()) }
		for _, row := range t.Rows {
			s := row.NewStages
			if s == nil {
				continue
			}
			sum := s.Lookup + s.Timer + s.Schedule + s.FwdSlot + s.Port + s.Insert + s.Send
			fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f ns |\n", row.Conns, ns(s.Lookup), ns(s.Schedule),
				ns(s.FwdSlot), ns(s.Port), ns(s.Insert), ns(s.Send), ns(s.Timer), ns(sum), row.NewNs)
		}
	}
	if len(t.Rows) > 2 {
		ref, last := t.Rows[1], t.Rows[len(t.Rows)-1]
		fmt.Fprintf(&sb, "\nestablished at %d vs %d connections: client->real %.2fx, real->client %.2fx\n",
			last.Conns, ref.Conns, last.FwdNs/ref.FwdNs, last.RevNs/ref.RevNs)
	}
	return sb.String()
}
