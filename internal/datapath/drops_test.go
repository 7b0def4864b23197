// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestDropRecorder: nobody listening, a drop is counted and not sampled;
// listening, a dropped frame comes out of the ring with its reason, its
// interface, its length and its first bytes (a frame longer than a
// sample is cut at 128), and the headers parse; a CPU that sampled its
// second's budget samples nothing more; a forwarded frame is never
// sampled.
func TestDropRecorder(t *testing.T) {
	e := newEnv(t, Options{})
	e.ingress = e.clientIf // the frames come in by the client's interface
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	ack := e.clientPkt(f, loadbalancer.TCP, 40001, 80, "A")
	ack.payload = bytes.Repeat([]byte("x"), 200)
	frame := ack.frame(t)

	samples := make(chan DropSample, 16)
	listen := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.dp.WatchDrops(ctx, func(s DropSample) { samples <- s }) }()
		// WatchDrops turns the recorder on before it reads
		deadline := time.Now().Add(2 * time.Second)
		for v := uint32(0); v == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			_ = e.dp.objs.XlbDropListeners.Get(&v)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	next := func(wait time.Duration) (DropSample, bool) {
		select {
		case s := <-samples:
			return s, true
		case <-time.After(wait):
			return DropSample{}, false
		}
	}

	e.expectDrop(frame, DropTCPNotSYN)
	stop := listen()
	if s, ok := next(300 * time.Millisecond); ok {
		t.Fatalf("a drop before anyone listened was sampled: %+v", s)
	}
	before := time.Now()
	e.expectDrop(frame, DropTCPNotSYN)
	s, ok := next(2 * time.Second)
	if !ok {
		t.Fatal("no sample of a drop while listening")
	}
	if s.Reason != DropTCPNotSYN || s.Len != len(frame) || s.Ifindex != e.ingress.Index || !bytes.Equal(s.Data, frame[:DropSampleBytes]) {
		t.Errorf("sample: reason %v len %d ifindex %d, %d bytes; want tcp_not_syn, %d, %d, the frame's first %d",
			s.Reason, s.Len, s.Ifindex, len(s.Data), len(frame), e.ingress.Index, DropSampleBytes)
	}
	if s.At.Before(before.Add(-time.Second)) || s.At.After(time.Now().Add(time.Second)) {
		t.Errorf("sample at %v, the drop was at %v", s.At, before)
	}
	h, ok := ParseHeaders(s.Data)
	if !ok || h.Proto != "tcp" || h.Src != netip.AddrPortFrom(f.client, 40001) || h.Dst != netip.AddrPortFrom(f.vip, 80) {
		t.Errorf("headers %+v (%v)", h, ok)
	}

	// a forwarded frame is not sampled
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40002, 80, "S").frame(t), XDPRedirect, nil)
	if s, ok := next(200 * time.Millisecond); ok {
		t.Errorf("a forwarded frame was sampled: %+v", s)
	}

	// this second's budget spent: nothing more this second
	for try := 0; ; try++ {
		second := monotonicSecond(t)
		spent := make([]xlbDropState, mustPossibleCPUs(t))
		for i := range spent {
			spent[i] = xlbDropState{Second: second, Sampled: 1000}
		}
		if err := e.dp.objs.DropStates.Put(uint32(0), spent); err != nil {
			t.Fatal(err)
		}
		e.expectDrop(frame, DropTCPNotSYN)
		if monotonicSecond(t) != second && try < 3 {
			continue // the second turned meanwhile: again
		}
		if s, ok := next(200 * time.Millisecond); ok {
			t.Errorf("a CPU past its budget sampled: %+v", s)
		}
		break
	}
	stop()
	var v uint32
	if err := e.dp.objs.XlbDropListeners.Get(&v); err != nil || v != 0 {
		t.Errorf("after the listener left, xlb_drop_listeners is %d (%v)", v, err)
	}
}

func monotonicSecond(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Sec)
}

func mustPossibleCPUs(t *testing.T) int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
