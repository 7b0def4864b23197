// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// NeighRequest is a next hop the data path dropped a packet for because
// the kernel had no resolved neighbour entry: the gateway of the route, or
// the destination itself when it is on-link. XDP cannot resolve it; the
// daemon does, so that the sender's retransmission goes through.
type NeighRequest struct {
	Addr    netip.Addr
	Ifindex int
}

// decodeNeighRequest reads one neigh_requests record.
func decodeNeighRequest(raw []byte) (NeighRequest, error) {
	var rec xlbNeighRequest
	if len(raw) < binary.Size(rec) {
		return NeighRequest{}, fmt.Errorf("neigh request of %d bytes, want %d", len(raw), binary.Size(rec))
	}
	if _, err := binary.Decode(raw, binary.NativeEndian, &rec); err != nil {
		return NeighRequest{}, fmt.Errorf("decode neigh request: %w", err)
	}
	req := NeighRequest{Ifindex: int(rec.Ifindex)}
	switch rec.Family {
	case familyV4:
		req.Addr = fromAddr(rec.Addr.W, familyV4)
	case familyV6:
		req.Addr = fromAddr(rec.Addr.W, familyV6)
	default:
		return NeighRequest{}, fmt.Errorf("neigh request of family %d", rec.Family)
	}
	return req, nil
}

// WatchNeighRequests calls fn for every next hop the data path asks to
// have resolved, until ctx is done. The same next hop is asked for once
// per dropped packet: fn should make repeated requests cheap.
func (d *Datapath) WatchNeighRequests(ctx context.Context, fn func(NeighRequest)) error {
	return readRing(ctx, d.objs.NeighRequests, func(raw []byte) error {
		req, err := decodeNeighRequest(raw)
		if err == nil {
			fn(req)
		}
		return err
	})
}

// readRing reads the ring buffer m until ctx is done, handing each
// record to fn; an error of fn ends it.
func readRing(ctx context.Context, m *ebpf.Map, fn func(raw []byte) error) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("read %s: %w", m, err)
	}
	defer rd.Close()
	for ctx.Err() == nil {
		rd.SetDeadline(time.Now().Add(200 * time.Millisecond))
		rec, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read %s: %w", m, err)
		}
		if err := fn(rec.RawSample); err != nil {
			return err
		}
	}
	return nil
}
