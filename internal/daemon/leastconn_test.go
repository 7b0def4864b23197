// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// fakeLeastConnPath serves a fixed status and records the weights set.
type fakeLeastConnPath struct {
	mu       sync.Mutex
	status   []loadbalancer.ServiceStatus
	setErr   error
	set      map[loadbalancer.ServiceKey]map[netip.AddrPort]uint32
	statuses atomic.Int32 // Status calls
}

func (f *fakeLeastConnPath) Status() ([]loadbalancer.ServiceStatus, error) {
	f.statuses.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeLeastConnPath) SetLeastConnWeights(k loadbalancer.ServiceKey, w map[netip.AddrPort]uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.setErr != nil {
		return f.setErr
	}
	if f.set == nil {
		f.set = map[loadbalancer.ServiceKey]map[netip.AddrPort]uint32{}
	}
	f.set[k] = w
	return nil
}

var (
	lcKey  = loadbalancer.ServiceKey{VIP: netip.MustParseAddr("10.0.0.1"), Port: 80, Proto: loadbalancer.TCP}
	realA  = netip.MustParseAddrPort("10.1.0.1:80")
	realB  = netip.MustParseAddrPort("10.1.0.2:80")
	errSet = errors.New("map update failed")
)

// lcReal is a real's status: weight, established connections, down.
func lcReal(ap netip.AddrPort, weight uint32, active int, down bool) loadbalancer.RealStatus {
	return loadbalancer.RealStatus{
		Real:        loadbalancer.Real{Addr: ap.Addr(), Port: ap.Port(), Weight: weight},
		ActiveConns: active,
		Down:        down,
	}
}

func lcService(s loadbalancer.Scheduler, conns uint64, reals ...loadbalancer.RealStatus) loadbalancer.ServiceStatus {
	return loadbalancer.ServiceStatus{
		Service: loadbalancer.Service{Key: lcKey, Scheduler: s},
		Stats:   loadbalancer.Counters{Conns: conns},
		Reals:   reals,
	}
}

// TestRebalance checks one period's weights (sched.LeastConnWeights
// scaled to 1000) as the daemon derives and installs them.
func TestRebalance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    loadbalancer.ServiceStatus
		setErr  error
		want    map[netip.AddrPort]uint32 // nil: nothing set
		wantErr error
	}{
		{"lc: the idle real takes the first period",
			lcService(loadbalancer.LeastConn, 10, lcReal(realA, 1, 10, false), lcReal(realB, 1, 0, false)),
			nil, map[netip.AddrPort]uint32{realA: 0, realB: 1000}, nil},
		{"lc: weights above 0 count as 1",
			lcService(loadbalancer.LeastConn, 0, lcReal(realA, 1, 0, false), lcReal(realB, 3, 0, false)),
			nil, map[netip.AddrPort]uint32{realA: 500, realB: 500}, nil},
		{"wlc: shares follow the weights",
			lcService(loadbalancer.WeightedLeastConn, 0, lcReal(realA, 1, 0, false), lcReal(realB, 3, 0, false)),
			nil, map[netip.AddrPort]uint32{realA: 250, realB: 750}, nil},
		{"a real down takes nothing",
			lcService(loadbalancer.WeightedLeastConn, 0, lcReal(realA, 1, 0, true), lcReal(realB, 1, 5, false)),
			nil, map[netip.AddrPort]uint32{realA: 0, realB: 1000}, nil},
		{"rr is left alone",
			lcService(loadbalancer.RoundRobin, 0, lcReal(realA, 1, 0, false)),
			nil, nil, nil},
		{"a service removed meanwhile is no error",
			lcService(loadbalancer.LeastConn, 0, lcReal(realA, 1, 0, false)),
			loadbalancer.ErrNotFound, nil, nil},
		{"other errors are returned",
			lcService(loadbalancer.LeastConn, 0, lcReal(realA, 1, 0, false)),
			errSet, nil, errSet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := &fakeLeastConnPath{status: []loadbalancer.ServiceStatus{tc.have}, setErr: tc.setErr}
			err := rebalance(dp, map[loadbalancer.ServiceKey]uint64{})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("rebalance: %v, want %v", err, tc.wantErr)
			}
			if got := dp.set[lcKey]; !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("weights %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRebalanceExpectsLastPeriodsArrivals checks that a period expects
// the connections the last one saw, and that a removed service is
// forgotten.
func TestRebalanceExpectsLastPeriodsArrivals(t *testing.T) {
	prev := map[loadbalancer.ServiceKey]uint64{}
	dp := &fakeLeastConnPath{status: []loadbalancer.ServiceStatus{
		lcService(loadbalancer.LeastConn, 100, lcReal(realA, 1, 10, false), lcReal(realB, 1, 0, false)),
	}}
	if err := rebalance(dp, prev); err != nil {
		t.Fatal(err)
	}
	if prev[lcKey] != 100 {
		t.Fatalf("remembered %d connections, want 100", prev[lcKey])
	}
	// 30 arrivals since: they fill realB up to realA's 10, then both
	// share the other 10 (20 and 10 of 30).
	dp.status = []loadbalancer.ServiceStatus{
		lcService(loadbalancer.LeastConn, 130, lcReal(realA, 1, 10, false), lcReal(realB, 1, 0, false)),
	}
	if err := rebalance(dp, prev); err != nil {
		t.Fatal(err)
	}
	if want := map[netip.AddrPort]uint32{realA: 333, realB: 667}; !maps.Equal(dp.set[lcKey], want) {
		t.Errorf("weights %v, want %v", dp.set[lcKey], want)
	}
	dp.status = nil
	if err := rebalance(dp, prev); err != nil {
		t.Fatal(err)
	}
	if len(prev) != 0 {
		t.Errorf("a removed service is remembered: %v", prev)
	}
}

// TestRunLeastConn checks the loop: it walks the data path only while an
// lc/wlc service is configured, and ends with its context.
func TestRunLeastConn(t *testing.T) {
	dp := &fakeLeastConnPath{status: []loadbalancer.ServiceStatus{
		lcService(loadbalancer.LeastConn, 0, lcReal(realA, 1, 0, false)),
	}}
	var active atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		runLeastConn(ctx, time.Millisecond, active.Load, dp, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	if n := dp.statuses.Load(); n != 0 {
		t.Errorf("%d walks with no lc/wlc service", n)
	}
	active.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for dp.statuses.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := dp.statuses.Load(); n < 2 {
		t.Errorf("%d walks in 5 s with an lc service, period 1 ms", n)
	}
	dp.mu.Lock()
	got := dp.set[lcKey]
	dp.mu.Unlock()
	if want := map[netip.AddrPort]uint32{realA: 1000}; !maps.Equal(got, want) {
		t.Errorf("weights %v, want %v", got, want)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
}
