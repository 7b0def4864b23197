// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// Drop is a dropped packet the data path sampled (GET
// /v1/drops/follow), as xlb drops --follow prints it.
type Drop struct {
	Time      time.Time `json:"time"`
	CPU       int       `json:"cpu"`
	Interface string    `json:"interface"`
	Reason    string    `json:"reason"`
	Len       int       `json:"len"` // the frame's length
	// Proto, Src and Dst are read from the frame's first bytes: empty
	// when they do not hold an IP header (e.g. eth_truncated).
	Proto string         `json:"proto,omitempty"`
	Src   netip.AddrPort `json:"src,omitzero"`
	Dst   netip.AddrPort `json:"dst,omitzero"`
	VLAN  int            `json:"vlan,omitempty"`
	// Data is the frame's first bytes (up to 128), hex.
	Data string `json:"data"`
}

// followDrops streams the drops the data path samples, one JSON object a
// line, until the client goes, count drops were sent (count=N) or the
// time asked for passed (seconds=N); reason=R keeps one reason.
func (s *server) followDrops(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	count, err := queryInt(q.Get("count"), 0, 1<<30)
	if err != nil {
		s.fail(w, r, badRequest("count: %v", err))
		return
	}
	secs, err := queryInt(q.Get("seconds"), 0, 86400)
	if err != nil {
		s.fail(w, r, badRequest("seconds: %v", err))
		return
	}
	reason := q.Get("reason")
	if reason != "" {
		st, err := s.b.Stats()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if _, ok := st.Drops[reason]; !ok {
			s.fail(w, r, badRequest("reason %q is not a drop reason (want one of %v)", reason, slices.Sorted(maps.Keys(st.Drops))))
			return
		}
	}
	ctx := r.Context()
	if secs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(secs)*time.Second)
		defer cancel()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	sent := 0
	err = s.b.FollowDrops(ctx, func(d Drop) {
		if reason != "" && d.Reason != reason {
			return
		}
		if enc.Encode(d) != nil || bw.Flush() != nil {
			stop()
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if sent++; count > 0 && sent >= count {
			stop()
		}
	})
	if err != nil {
		s.log.Warn("follow drops", "err", err)
	}
}

func queryInt(v string, least, most int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > most {
		return 0, fmt.Errorf("%q: want a whole number from %d to %d", v, least, most)
	}
	return n, nil
}
