// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"encoding/hex"
	"net"
	"strconv"
	"sync"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// dropFollowers fans the data path's drop samples out to everyone who
// follows them (GET /v1/drops/follow). The ring has one reader: the
// first follower starts it, which turns the recorder on; the last one to
// go stops it, which turns it off, so the recorder costs nothing while
// no one follows.
type dropFollowers struct {
	mu     sync.Mutex
	subs   map[int]chan api.Drop
	next   int
	cancel context.CancelFunc
	done   chan struct{}
}

// followerQueue is how many samples wait for a slow follower; more are
// not sent to it.
const followerQueue = 256

// FollowDrops implements api.Backend.
func (d *Daemon) FollowDrops(ctx context.Context, fn func(api.Drop)) error {
	f := &d.drops
	ch := make(chan api.Drop, followerQueue)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[int]chan api.Drop{}
	}
	id := f.next
	f.next++
	f.subs[id] = ch
	if f.cancel == nil {
		rctx, cancel := context.WithCancel(context.Background())
		f.cancel, f.done = cancel, make(chan struct{})
		go d.readDrops(rctx, f.done)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, id)
		var wait chan struct{}
		if len(f.subs) == 0 && f.cancel != nil {
			f.cancel()
			wait, f.cancel = f.done, nil
		}
		f.mu.Unlock()
		if wait != nil {
			<-wait // the recorder is off when the last follower returns
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case drop := <-ch:
			fn(drop)
		}
	}
}

// readDrops reads the ring until ctx ends and hands each sample to every
// follower.
func (d *Daemon) readDrops(ctx context.Context, done chan struct{}) {
	defer close(done)
	names := map[int]string{}
	err := d.dp.WatchDrops(ctx, func(s datapath.DropSample) {
		drop := dropOf(s, names)
		d.drops.mu.Lock()
		for _, ch := range d.drops.subs {
			select {
			case ch <- drop:
			default: // a slow follower misses samples, the others do not wait
			}
		}
		d.drops.mu.Unlock()
	})
	if err != nil {
		d.log.Warn("drop recorder", "err", err)
	}
}

// dropOf is a sample as the API shows it; names caches interface names.
func dropOf(s datapath.DropSample, names map[int]string) api.Drop {
	name, ok := names[s.Ifindex]
	if !ok {
		name = strconv.Itoa(s.Ifindex)
		if ifi, err := net.InterfaceByIndex(s.Ifindex); err == nil {
			name = ifi.Name
		}
		names[s.Ifindex] = name
	}
	drop := api.Drop{Time: s.At, CPU: s.CPU, Interface: name, Reason: s.Reason.String(), Len: s.Len, Data: hex.EncodeToString(s.Data)}
	if h, ok := datapath.ParseHeaders(s.Data); ok {
		drop.Proto, drop.Src, drop.Dst, drop.VLAN = h.Proto, h.Src, h.Dst, h.VLAN
	}
	return drop
}
