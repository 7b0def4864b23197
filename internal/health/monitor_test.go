// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
)

// TestMonitorRiseAndFall feeds a scripted sequence of results to one
// real and checks the transitions: down after Fall failures in a row, up
// after Rise successes in a row, nothing for shorter streaks.
func TestMonitorRiseAndFall(t *testing.T) {
	//          a failure streak of 2 (< fall 3), then 3: down;
	//          a success streak of 1 (< rise 2), then 2: up
	script := []bool{true, false, false, true, false, false, false, false, true, false, true, true, true}
	want := []bool{false, true}
	var (
		mu   sync.Mutex
		i    int
		got  []bool
		done = make(chan struct{})
	)
	m := NewMonitor(func(tr Transition) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, tr.Up)
	})
	m.check = func(context.Context, config.HealthCheck, Target) error {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(script) {
			if i == len(script) {
				close(done)
			}
			i++
			return nil
		}
		ok := script[i]
		i++
		if ok {
			return nil
		}
		return errors.New("scripted failure")
	}
	c := config.HealthCheck{Type: "tcp", Interval: config.Duration(time.Millisecond), Rise: 2, Fall: 3}.WithDefaults()
	tg := target(t, "127.0.0.1:80")
	m.Sync(map[Target]config.HealthCheck{tg: c}, func(Target) bool { return true })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the script did not run to its end")
	}
	m.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("transitions %v, want %v", got, want)
	}
	if st := m.States(); len(st) != 0 {
		t.Errorf("after Close, states %v", st)
	}
}

// TestMonitorStartsDown: a real the data path has down stays down until
// Rise successes, and Sync with the same check does not restart it.
func TestMonitorStartsDown(t *testing.T) {
	ups := make(chan Transition, 4)
	m := NewMonitor(func(tr Transition) { ups <- tr })
	m.check = func(context.Context, config.HealthCheck, Target) error { return nil }
	defer m.Close()
	c := config.HealthCheck{Type: "tcp", Interval: config.Duration(5 * time.Millisecond), Rise: 3}.WithDefaults()
	tg := target(t, "127.0.0.1:80")
	m.Sync(map[Target]config.HealthCheck{tg: c}, func(Target) bool { return false })
	select {
	case tr := <-ups:
		if !tr.Up {
			t.Fatalf("transition to down from down")
		}
		st := m.States()[tg.Service][tg.Real]
		if st.Checks < 3 || !st.Up {
			t.Errorf("state %+v after coming up: want >= 3 checks", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never came up")
	}
	m.Sync(map[Target]config.HealthCheck{}, nil)
	if len(m.States()) != 0 {
		t.Error("Sync with no targets left checks running")
	}
}
