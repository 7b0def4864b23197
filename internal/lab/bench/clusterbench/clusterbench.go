// SPDX-License-Identifier: Apache-2.0

// Package clusterbench measures a cluster of xlb nodes behind an ECMP
// router (`xlb bench cluster`), per node count, as the Arion DP report's
// cluster run does: many concurrent streams through the VIP (aggregate
// throughput) and new connections as fast as the client opens them
// (CPS), with the share of each node in both. Every node syncs its
// connections to the others, as a cluster runs.
//
// The lab is internal/lab/cluster's: a client, an FRR router, the nodes
// and the reals, in network namespaces of one machine. On a machine of
// few CPUs the router's kernel forwarding, the client and the servers
// share them with the nodes: more nodes add no CPU, and the figures
// show the spread and the cost of sync more than a scaling.
package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/cluster"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Options say what to measure.
type Options struct {
	// Nodes are the node counts, a row each (default 1, 2, 3).
	Nodes []int
	// Streams are the concurrent streams of the throughput trial
	// (default 150, as the Arion report); Workers the connections the
	// CPS trial opens at once (default 32).
	Streams, Workers int
	// Duration is each trial's length (default 10 s).
	Duration time.Duration
	Reals    int // default 3
	Self     string
	LabName  string
	LabNet   uint8
}

// Row is one node count's figures.
type Row struct {
	Nodes int `json:"nodes"`
	// NoSync: the nodes synced no connections (the row that shows what
	// sync costs).
	NoSync bool `json:"no_sync,omitempty"`
	// StreamBytes were received over the throughput trial's StreamSecs
	// by Streams streams; StreamsPerNode counts the streams by the node
	// that carried them (its local IP, as the real saw it).
	Streams        int            `json:"streams"`
	StreamBytes    uint64         `json:"stream_bytes"`
	StreamSecs     float64        `json:"stream_seconds"`
	StreamsPerNode map[string]int `json:"streams_per_node"`
	// Conns were opened and answered in ConnSecs, by Workers at once;
	// ConnErrors failed; ConnsPerNode counts them by node.
	Workers      int            `json:"workers"`
	Conns        uint64         `json:"conns"`
	ConnErrors   uint64         `json:"conn_errors"`
	ConnSecs     float64        `json:"conn_seconds"`
	ConnsPerNode map[string]int `json:"conns_per_node"`
	// ConnErrorSamples are the first few errors.
	ConnErrorSamples []string `json:"conn_error_samples,omitempty"`
	// Synced counts the connections the nodes sent each other and
	// SyncDropped those lost to a full queue.
	Synced      uint64 `json:"synced"`
	SyncDropped uint64 `json:"sync_dropped"`
}

// Gbps is the throughput trial's aggregate rate.
func (r Row) Gbps() float64 { return float64(r.StreamBytes) * 8 / r.StreamSecs / 1e9 }

// CPS is the CPS trial's rate of answered connections.
func (r Row) CPS() float64 { return float64(r.Conns) / r.ConnSecs }

// Table is the run's rows.
type Table struct {
	Rows []Row `json:"rows"`
	// Changes are the held connections' fate through a node added,
	// drained and killed, in a cluster of the most nodes asked (3 at
	// least; none with fewer).
	Changes []cluster.Change `json:"changes,omitempty"`
	// ChangesNodes is that cluster's size.
	ChangesNodes int `json:"changes_nodes,omitempty"`
	// FRR is the router's version.
	FRR string `json:"frr"`
}

func (o *Options) defaults() {
	if len(o.Nodes) == 0 {
		o.Nodes = []int{1, 2, 3}
	}
	if o.Streams == 0 {
		o.Streams = 150
	}
	if o.Workers == 0 {
		o.Workers = 32
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Reals == 0 {
		o.Reals = 3
	}
}

// Measure runs a cluster of each node count in turn and measures it.
func Measure(ctx context.Context, o Options, progress func(string)) (*Table, error) {
	o.defaults()
	for _, n := range o.Nodes {
		if n < 1 || n > 8 {
			return nil, fmt.Errorf("cluster: %d nodes: want 1 to 8", n)
		}
	}
	t := &Table{FRR: frrVersion()}
	type run struct {
		nodes  int
		noSync bool
	}
	var runs []run
	for _, n := range o.Nodes {
		runs = append(runs, run{nodes: n})
	}
	if most := slices.Max(o.Nodes); most > 1 {
		runs = append(runs, run{nodes: most, noSync: true})
	}
	for _, ru := range runs {
		n := ru.nodes
		progress(fmt.Sprintf("%d nodes (sync %v): building the cluster", n, !ru.noSync))
		row, err := measureNodes(ctx, o, n, ru.noSync, progress)
		if err != nil {
			return t, fmt.Errorf("%d nodes: %w", n, err)
		}
		t.Rows = append(t.Rows, row)
		progress(fmt.Sprintf("%d nodes: %.2f Gbit/s over %d streams %v, %.0f connections/s %v, %d errors",
			n, row.Gbps(), row.Streams, row.StreamsPerNode, row.CPS(), row.ConnsPerNode, row.ConnErrors))
	}
	if most := slices.Max(o.Nodes); most >= 3 {
		progress(fmt.Sprintf("%d nodes: %d held connections through a node added, drained and killed", most, o.Streams))
		changes, err := measureChanges(ctx, o, most, progress)
		t.Changes, t.ChangesNodes = changes, most
		if err != nil {
			return t, fmt.Errorf("node changes: %w", err)
		}
	}
	return t, nil
}

func measureChanges(ctx context.Context, o Options, n int, progress func(string)) (out []cluster.Change, err error) {
	c := cluster.New(o.LabName, o.LabNet, n, o.Reals)
	if err := c.Up(); err != nil {
		return nil, err
	}
	defer func() {
		if derr := c.Down(); derr != nil && err == nil {
			err = derr
		}
	}()
	srvs, err := c.StartServers(topo.XLBServe(o.Self), false)
	if err != nil {
		return nil, err
	}
	defer srvs.Stop()
	if err := c.WaitServers(ctx); err != nil {
		return nil, err
	}
	return c.NodeChanges(ctx, o.Self, o.Streams, progress)
}

func measureNodes(ctx context.Context, o Options, n int, noSync bool, progress func(string)) (row Row, err error) {
	c := cluster.New(o.LabName, o.LabNet, n, o.Reals)
	if err := c.Up(); err != nil {
		return row, err
	}
	defer func() {
		if derr := c.Down(); derr != nil && err == nil {
			err = derr
		}
	}()
	srvs, err := c.StartServers(topo.XLBServe(o.Self), false)
	if err != nil {
		return row, err
	}
	defer srvs.Stop()
	if err := c.WaitServers(ctx); err != nil {
		return row, err
	}
	ds, err := c.StartNodes(ctx, o.Self, cluster.NodeOptions{NoSync: noSync})
	if err != nil {
		return row, err
	}
	defer func() {
		for _, d := range ds {
			_ = d.Stop()
		}
	}()
	if err := c.AwaitVIP(c.AllNodes(), 30*time.Second); err != nil {
		return row, err
	}
	row = Row{Nodes: n, NoSync: noSync, Streams: o.Streams, Workers: o.Workers}
	progress(fmt.Sprintf("%d nodes: %d streams for %v", n, o.Streams, o.Duration))
	if err := streams(ctx, c, o, &row); err != nil {
		return row, fmt.Errorf("streams: %w", err)
	}
	progress(fmt.Sprintf("%d nodes: new connections from %d workers for %v", n, o.Workers, o.Duration))
	if err := openConns(ctx, c, o, &row); err != nil {
		return row, fmt.Errorf("connections: %w", err)
	}
	for _, d := range ds {
		st, err := d.Client().Node(ctx)
		if err != nil {
			return row, err
		}
		for _, p := range st.Sync {
			row.Synced += p.Sent
			row.SyncDropped += p.Dropped
		}
	}
	return row, nil
}

// streamBytes is what one request of a stream asks for; a stream asks
// again until the trial ends.
const streamBytes = 64 << 20

// streams runs o.Streams concurrent streams from the client through the
// VIP for o.Duration and counts what arrived.
func streams(ctx context.Context, c cluster.Cluster, o Options, row *Row) error {
	vip := netip.AddrPortFrom(c.VIP(), topo.ServicePort).String()
	conns := make([]net.Conn, 0, o.Streams)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	err := netns.Run(c.Client(), func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		for range o.Streams {
			conn, err := d.DialContext(ctx, "tcp", vip)
			if err != nil {
				return err
			}
			conns = append(conns, conn)
		}
		return nil
	})
	if err != nil {
		return err
	}
	row.StreamsPerNode = map[string]int{}
	readers := make([]*streamConn, len(conns))
	for i, conn := range conns {
		readers[i] = &streamConn{topo.NewHTTPConn(conn)}
		answer, err := readers[i].Get("/")
		if err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
		row.StreamsPerNode[nodeOf(c, answer)]++
	}
	var total atomic.Uint64
	deadline := time.Now().Add(o.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(readers))
	for _, r := range readers {
		wg.Go(func() {
			_ = r.Conn.SetDeadline(deadline.Add(5 * time.Second))
			for time.Now().Before(deadline) {
				n, err := r.stream(streamBytes, deadline)
				total.Add(uint64(n))
				if err != nil {
					if !errors.Is(err, errTrialOver) {
						errs <- err
					}
					return
				}
			}
		})
	}
	wg.Wait()
	row.StreamSecs = time.Since(start).Seconds()
	row.StreamBytes = total.Load()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return nil
}

// openConns opens connections from o.Workers workers at once for
// o.Duration: each connects, asks for /, reads the answer and resets the
// connection (no TIME_WAIT to run the client out of ports).
func openConns(ctx context.Context, c cluster.Cluster, o Options, row *Row) error {
	vip := netip.AddrPortFrom(c.VIP(), topo.ServicePort).String()
	var mu sync.Mutex
	row.ConnsPerNode = map[string]int{}
	var ok, failed atomic.Uint64
	deadline := time.Now().Add(o.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			perNode := map[string]int{}
			_ = netns.Run(c.Client(), func() error {
				for time.Now().Before(deadline) && ctx.Err() == nil {
					answer, err := oneConn(ctx, vip)
					if err != nil {
						failed.Add(1)
						mu.Lock()
						if len(row.ConnErrorSamples) < 5 {
							row.ConnErrorSamples = append(row.ConnErrorSamples, err.Error())
						}
						mu.Unlock()
						continue
					}
					ok.Add(1)
					perNode[nodeOf(c, answer)]++
				}
				return nil
			})
			mu.Lock()
			for k, v := range perNode {
				row.ConnsPerNode[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	row.ConnSecs = time.Since(start).Seconds()
	row.Conns, row.ConnErrors = ok.Load(), failed.Load()
	return nil
}

func oneConn(ctx context.Context, vip string) (string, error) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", vip)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	return topo.NewHTTPConn(conn).Get("/")
}

// nodeOf names the node whose local IP a real's answer ("realN
// IP:port") names.
func nodeOf(c cluster.Cluster, answer string) string {
	f := strings.Fields(answer)
	if len(f) >= 2 {
		if ap, err := netip.ParseAddrPort(f[1]); err == nil {
			if i := c.NodeIndex(ap.Addr()); i > 0 {
				return "node" + strconv.Itoa(i)
			}
		}
	}
	return "unknown"
}

// frrVersion is the router's FRR version, as bgpd says it.
func frrVersion() string {
	out, err := execOutput("/usr/lib/frr/bgpd", "--version")
	if err != nil {
		return "FRR (version unknown)"
	}
	first, _, _ := strings.Cut(out, "\n")
	return "FRR " + strings.TrimSpace(first)
}
