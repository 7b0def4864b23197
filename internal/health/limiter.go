// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"sync"
)

// Limiter bounds how many exec check commands run at once. Its bound
// can change while commands run: a lower one lets no new command start
// until enough have ended; none is stopped.
type Limiter struct {
	mu      sync.Mutex
	limit   int
	running int
	// changed is closed, and replaced, each time a slot frees or the
	// bound rises: the waiters then try again.
	changed chan struct{}
}

// NewLimiter returns a limiter of n slots (at least 1).
func NewLimiter(n int) *Limiter {
	return &Limiter{limit: max(n, 1), changed: make(chan struct{})}
}

// SetLimit changes the number of slots (at least 1).
func (l *Limiter) SetLimit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n = max(n, 1); n > l.limit {
		l.wake()
	}
	l.limit = n
}

// Limit returns the number of slots.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// Running returns how many slots are taken.
func (l *Limiter) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// Acquire takes a slot, waiting for one until ctx ends; then it returns
// ctx's error. A slot taken is given back with Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.running < l.limit {
			l.running++
			l.mu.Unlock()
			return nil
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// Release gives back a slot taken by Acquire.
func (l *Limiter) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	l.wake()
}

// wake lets the waiters try again; l.mu is held.
func (l *Limiter) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}
