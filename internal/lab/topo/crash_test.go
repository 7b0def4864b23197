// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// probe is traffic through the balancer while a test kills or restarts
// the daemon: one held keep-alive connection asking one request after
// another, and a new connection (connect, request, close) every 50 ms.
// Both loops are bounded in count and stop by themselves.
type probe struct {
	heldOK, heldFail atomic.Int64
	newOK, newFail   atomic.Int64
	mu               sync.Mutex
	errs             []string
	stop             chan struct{}
	wg               sync.WaitGroup
}

const (
	probeEvery   = 50 * time.Millisecond
	probeMaxRuns = 2000 // 100 s of new connections at most
)

func startProbe(t *testing.T, ctx context.Context, topo Topology) *probe {
	t.Helper()
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	held, err := dialKeepAlive(ctx, topo.Client(), vip)
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{stop: make(chan struct{})}
	fail := func(what string, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.errs) < 20 {
			p.errs = append(p.errs, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), what, err))
		}
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		defer held.conn.Close()
		for i := 0; i < 50*probeMaxRuns; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			if _, err := held.getBody("/"); err != nil {
				p.heldFail.Add(1)
				fail("held connection", err)
				return // a broken connection stays broken
			}
			p.heldOK.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for i := 0; i < probeMaxRuns; i++ {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			k, err := dialKeepAlive(ctx, topo.Client(), vip)
			if err == nil {
				_, err = k.getBody("/")
				k.conn.Close()
			}
			if err != nil {
				p.newFail.Add(1)
				fail("new connection", err)
				continue
			}
			p.newOK.Add(1)
		}
	}()
	return p
}

// finish stops the traffic and fails the test on any failed request or
// connection.
func (p *probe) finish(t *testing.T, when string) {
	t.Helper()
	close(p.stop)
	p.wg.Wait()
	t.Logf("%s: held connection %d requests answered, %d failed; new connections %d ok, %d failed",
		when, p.heldOK.Load(), p.heldFail.Load(), p.newOK.Load(), p.newFail.Load())
	if p.heldFail.Load() > 0 || p.newFail.Load() > 0 {
		t.Errorf("%s: failures:\n%s", when, strings.Join(p.errs, "\n"))
	}
	if p.newOK.Load() == 0 || p.heldOK.Load() == 0 {
		t.Errorf("%s: no traffic went through", when)
	}
}

// tcpRetransmits sums the TCP segments retransmitted in the client's and
// the reals' namespaces: a packet the balancer lost shows up here.
func tcpRetransmits(t *testing.T, topo Topology) int64 {
	t.Helper()
	var sum int64
	nss := []string{topo.Client()}
	for i := 1; i <= topo.Reals; i++ {
		nss = append(nss, topo.Real(i))
	}
	for _, ns := range nss {
		err := netns.Run(ns, func() error {
			// thread-self: the namespace of this thread, not the process's
			b, err := os.ReadFile("/proc/thread-self/net/snmp")
			if err != nil {
				return err
			}
			n, err := snmpField(string(b), "Tcp", "RetransSegs")
			sum += n
			return err
		})
		if err != nil {
			t.Fatalf("read TCP counters in %s: %v", ns, err)
		}
	}
	return sum
}

// snmpField reads one counter of /proc/net/snmp (a header line of names
// and a line of values per protocol).
func snmpField(snmp, proto, name string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(snmp))
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i := range names {
			if names[i] == name && i < len(f) {
				return strconv.ParseInt(f[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s %s in /proc/net/snmp", proto, name)
}

// crashUnderProbe kills the daemon under a probe's connections, starts
// it again after pause, and checks that no connection failed and no
// segment was retransmitted meanwhile.
func crashUnderProbe(t *testing.T, ctx context.Context, topo Topology, d *Daemon, pause time.Duration, when string) {
	t.Helper()
	before := tcpRetransmits(t, topo)
	p := startProbe(t, ctx, topo)
	time.Sleep(time.Second)
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	d2, err := topo.StartDaemon(ctx, xlbBinary)
	if err != nil {
		p.finish(t, when)
		t.Fatalf("start after kill -9: %v", err)
	}
	*d = *d2
	time.Sleep(time.Second)
	p.finish(t, when)
	if n := tcpRetransmits(t, topo) - before; n != 0 {
		t.Errorf("%d TCP segments retransmitted around the crash and restart, want 0", n)
	}
}

// TestCrashKeepsForwarding: kill -9 of the daemon under traffic loses no
// connection and no packet while it is dead (the pinned link keeps the
// program attached); the daemon started again takes over the data path,
// its addresses and its record without error or gap; after a second
// crash `xlb datapath detach` removes everything.
func TestCrashKeepsForwarding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 3, "rr")
	crashUnderProbe(t, ctx, topo, d, 3*time.Second, "kill -9, then start") // 60 new connections with no daemon
	// the new daemon reconciled: the file's services, each address once
	svcs, err := d.Client().Services(ctx)
	if err != nil || len(svcs) != 3 {
		t.Fatalf("after the restart the daemon holds %d services (%v), want 3", len(svcs), err)
	}
	if n := strings.Count(lbAddrs(t, topo), topo.VIP().String()+"/32"); n != 1 {
		t.Errorf("the VIP is on the balancer %d times after the restart, want once", n)
	}

	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	_, sock, pins := topo.DaemonFiles()
	out, err := topo.Exec(topo.LB(), xlbBinary, "datapath", "detach", "--pin-path", pins, "--socket", sock).CombinedOutput()
	if err != nil {
		t.Fatalf("xlb datapath detach: %v: %s", err, out)
	}
	assertNothingLeft(t, topo)
}

// TestRestartWithChangedConfig: a hand-over restart (SIGUSR2, what the
// unit's ExecStop sends when systemd restarts xlb) into a configuration
// with one more real loses no connection and retransmits no packet, and
// the new real then takes new connections.
func TestRestartWithChangedConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topo := testTopology(t, 3)
	_, d := startLabWith(t, ctx, topo, topo.ConfigWith("rr", []int{1, 2}))
	before := tcpRetransmits(t, topo)
	p := startProbe(t, ctx, topo)
	time.Sleep(time.Second)
	if err := d.HandOver(); err != nil {
		t.Fatal(err)
	}
	if err := topo.WriteConfig(topo.ConfigWith("rr", []int{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	d2, err := topo.StartDaemon(ctx, xlbBinary)
	if err != nil {
		p.finish(t, "restart")
		t.Fatalf("start after the hand-over: %v", err)
	}
	*d = *d2
	time.Sleep(time.Second)
	p.finish(t, "restart with a changed configuration")
	if n := tcpRetransmits(t, topo) - before; n != 0 {
		st, err := d.Client().Stats(ctx)
		t.Errorf("%d TCP segments retransmitted around the restart, want 0 (the new daemon counts drops %v, %v)", n, st.Drops, err)
	}
	if seen := answeredBy(t, ctx, topo, 9); seen["real3"] == 0 {
		t.Errorf("the real the new configuration added took none of 9 new connections: %v", seen)
	}
}

// TestStopRemovesEverything: SIGTERM (systemctl stop) leaves no address,
// no XDP program, no pin, no neighbour entry and no socket behind.
func TestStopRemovesEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 2, "rr")
	if seen := answeredBy(t, ctx, topo, 4); len(seen) != 2 {
		t.Fatalf("before the stop, 4 connections went to %v", seen)
	}
	if !strings.Contains(lbNeighbours(t, topo), "extern_learn") {
		t.Fatalf("the daemon added no managed neighbour entry to check the stop against:\n%s", lbNeighbours(t, topo))
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, topo)
}

// assertNothingLeft checks the balancer namespace and the host hold
// nothing of the daemon.
func assertNothingLeft(t *testing.T, topo Topology) {
	t.Helper()
	addrs := lbAddrs(t, topo)
	for _, a := range []netip.Addr{topo.VIP(), topo.LocalIP(), topo.VIP6(), topo.LocalIP6()} {
		if strings.Contains(addrs, a.String()+"/") {
			t.Errorf("address %s left on the balancer:\n%s", a, addrs)
		}
	}
	links, err := topo.Exec(topo.LB(), "ip", "-d", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(links), "prog/xdp") {
		t.Errorf("an XDP program is left attached:\n%s", links)
	}
	if n := lbNeighbours(t, topo); strings.Contains(n, "extern_learn") {
		t.Errorf("managed neighbour entries left:\n%s", n)
	}
	_, sock, pins := topo.DaemonFiles()
	for _, path := range []string{pins, sock, sock + ".lock"} {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s left behind", path)
		}
	}
}

func lbAddrs(t *testing.T, topo Topology) string {
	t.Helper()
	out, err := topo.Exec(topo.LB(), "ip", "-o", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr: %v: %s", err, out)
	}
	return string(out)
}

// lbNeighbours lists the balancer's neighbour entries with their flags.
func lbNeighbours(t *testing.T, topo Topology) string {
	t.Helper()
	out, err := topo.Exec(topo.LB(), "ip", "-j", "neigh", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip neigh: %v: %s", err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("ip -j neigh: %v", err)
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%v dev %v", r["dst"], r["dev"])
		for k := range r {
			if k == "managed" || k == "extern_learn" {
				b.WriteString(" " + k)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
