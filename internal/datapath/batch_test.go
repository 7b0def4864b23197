// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"net/netip"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestBatchSettlesTogether: inside a batch, a service keeps scheduling
// by its old table (a new real gets no connection yet) and a service
// added in it schedules nothing; when the batch returns, both tables are
// in, and ids freed in the batch are free again.
func TestBatchSettlesTogether(t *testing.T) {
	f := families[0]
	e := newEnv(t, Options{})
	a := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	b := loadbalancer.ServiceKey{VIP: f.vip, Port: 81, Proto: loadbalancer.TCP}
	e.addService(a, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	var inside []string
	err := e.dp.Batch(func() error {
		if err := e.dp.SetReals(a, reals(f, 0, 1)[1:]); err != nil { // real 2 replaces real 1
			return err
		}
		if got := e.realOf(e.clientPkt(f, loadbalancer.TCP, 30000, 80, "S")); got != f.real(1) {
			inside = append(inside, "service a went to "+got.String()+" before the batch settled, want its old real 1")
		}
		if err := e.dp.AddService(loadbalancer.Service{Key: b, Scheduler: loadbalancer.RoundRobin, LocalIPs: []netip.Addr{f.laddr}}); err != nil {
			return err
		}
		return e.dp.SetReals(b, reals(f, 0, 0, 1)[2:])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range inside {
		t.Error(s)
	}
	if got := e.realOf(e.clientPkt(f, loadbalancer.TCP, 30001, 80, "S")); got != f.real(2) {
		t.Errorf("after the batch, service a went to %s, want real 2", got)
	}
	if got := e.realOf(e.clientPkt(f, loadbalancer.TCP, 30002, 81, "S")); got != f.real(3) {
		t.Errorf("after the batch, service b went to %s, want real 3", got)
	}
	if n := len(e.dp.reg.realIDs.held) + len(e.dp.reg.svcIDs.held); n != 0 || len(e.dp.pend.tables) != 0 {
		t.Errorf("after the batch: %d ids held, %d tables pending", n, len(e.dp.pend.tables))
	}
	if len(e.dp.reg.realIDs.free) != 1 {
		t.Errorf("real 1's id is not free after the batch: free %v", e.dp.reg.realIDs.free)
	}
}

// TestIDAllocHold: a held id is given out only after release.
func TestIDAllocHold(t *testing.T) {
	a := idAlloc{what: "test", max: 2}
	x, _ := a.get()
	y, _ := a.get()
	a.hold(x)
	if a.hasFree() {
		t.Fatal("an id held is free before release")
	}
	if _, err := a.get(); err == nil {
		t.Fatal("get gave an id while the only one freed is held")
	}
	a.release()
	if got, err := a.get(); err != nil || got != x {
		t.Fatalf("after release: %d, %v; want %d", got, err, x)
	}
	_ = y
}
