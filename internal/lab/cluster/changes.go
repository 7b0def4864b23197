// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Change is what became of the held connections through one node
// change.
type Change struct {
	// Change is "add", "drain" or "kill".
	Change string `json:"change"`
	Held   int    `json:"held"`
	Broken int    `json:"broken"`
	// Moved counts the client packets the node that gained flows
	// forwarded after the change (add: the new node): a proof that flows
	// moved at all.
	Moved uint64 `json:"moved_packets,omitempty"`
	// MaxStall is the longest a held connection went without an answer
	// so far.
	MaxStall time.Duration `json:"max_stall_ns"`
	// After a kill: how long after it the last new connection failed,
	// and how many failed.
	NewConnsBack   time.Duration `json:"new_conns_back_ns,omitempty"`
	NewConnsFailed int           `json:"new_conns_failed,omitempty"`
	Errors         []string      `json:"errors,omitempty"`
}

// NodeChanges brings up the cluster's nodes but the last, holds held
// connections through the VIP (each asking every 100 ms), and then adds
// the last node, drains node1 and kills node2 (its machine silent at the
// router, its daemon killed): after each it reports how many held
// connections broke. The cluster must be up with its servers, without
// daemons, and have 3 nodes at least. The daemons are stopped at the end.
func (c Cluster) NodeChanges(ctx context.Context, self string, held int, progress func(string)) (out []Change, err error) {
	if c.Nodes < 3 {
		return nil, fmt.Errorf("node changes: %d nodes; want 3 at least (one added, one drained, one killed)", c.Nodes)
	}
	ds := make([]*topo.Daemon, c.Nodes+1) // by node number
	defer func() {
		for i, d := range ds {
			if d != nil {
				if serr := d.Stop(); serr != nil && err == nil {
					err = fmt.Errorf("stop node%d: %w", i, serr)
				}
			}
		}
	}()
	var first []int
	for i := 1; i < c.Nodes; i++ {
		if ds[i], err = c.startNode(ctx, self, i, NodeOptions{}); err != nil {
			return nil, err
		}
		first = append(first, i)
	}
	if err := c.AwaitVIP(first, 30*time.Second); err != nil {
		return nil, err
	}
	h, err := c.Hold(ctx, held, 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer h.Stop()
	time.Sleep(time.Second) // every connection synced
	report := func(name string, settle time.Duration, ch Change) Change {
		time.Sleep(settle)
		r := h.Report(c)
		ch.Change, ch.Held, ch.Broken, ch.MaxStall, ch.Errors = name, r.Conns, r.Broken, r.MaxStall, r.Errors
		progress(fmt.Sprintf("%s: %d of %d held connections broken, longest stall %v", name, r.Broken, r.Conns, r.MaxStall.Round(time.Millisecond)))
		return ch
	}

	// add: the last node gets the others' connections, then announces
	last := c.Nodes
	if ds[last], err = c.startNode(ctx, self, last, NodeOptions{}); err != nil {
		return out, err
	}
	if err := c.AwaitVIP(c.AllNodes(), 30*time.Second); err != nil {
		return out, fmt.Errorf("add: %w", err)
	}
	add := report("add", 2*time.Second, Change{})
	if add.Moved, err = forwardedPackets(ctx, ds[last]); err != nil {
		return out, err
	}
	out = append(out, add)

	// drain: node1's flows move to the others
	if _, err := ds[1].Client().Drain(ctx, true); err != nil {
		return out, err
	}
	if err := c.AwaitVIP(c.AllNodes()[1:], 30*time.Second); err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out = append(out, report("drain", 2*time.Second, Change{}))

	// kill: node2's machine goes silent first (no FIN of its BGP session
	// reaches the router, which would keep its routes for the graceful
	// restart), then its daemon dies; the router notices at its hold time
	killed := time.Now()
	if err := c.Silence(2); err != nil {
		return out, err
	}
	if err := ds[2].Kill(); err != nil {
		return out, err
	}
	ds[2] = nil
	kill := Change{}
	kill.NewConnsBack, kill.NewConnsFailed, err = c.NewConnsBack(ctx, killed, 100*time.Millisecond, 2*routerHold*time.Second+2*time.Second)
	if err != nil {
		return out, err
	}
	var survivors []int
	for i := 3; i <= c.Nodes; i++ {
		survivors = append(survivors, i)
	}
	if err := c.AwaitVIP(survivors, 30*time.Second); err != nil {
		return out, fmt.Errorf("kill: %w", err)
	}
	out = append(out, report("kill", 2*time.Second, kill))
	return out, nil
}

// RouterHold is the router's BGP hold time in the lab.
const RouterHold = routerHold * time.Second

// forwardedPackets is how many client packets node d forwarded for the
// VIP's services.
func forwardedPackets(ctx context.Context, d *topo.Daemon) (uint64, error) {
	svcs, err := d.Client().Services(ctx)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, s := range svcs {
		n += s.Stats.InPackets
	}
	if n == 0 {
		return 0, errors.New("add: the new node forwarded no packet: no held flow moved to it")
	}
	return n, nil
}
