// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// ConnRow is one line of ipvsadm -L -c: a connection as IPVS lists it.
type ConnRow struct {
	Proto   string        // TCP or UDP
	Expire  time.Duration // time left before the entry expires if idle
	State   string
	Source  netip.AddrPort // the client
	Virtual netip.AddrPort // the VIP and port it connected to
	Dest    netip.AddrPort // the real it was sent to
}

// connKey pairs a connection's two entries: the client and the local
// address and port FullNAT gave it.
type connKey struct {
	proto         loadbalancer.Proto
	client, local netip.AddrPort
}

// ConnRows turns the daemon's connection entries into ipvsadm's rows. A
// FullNAT connection has two entries: the forward one (client -> VIP,
// its peer the local address) and the reverse one (real -> local
// address, its peer the client); a row is the forward entry with its
// real taken from the reverse entry, and expires timeout(state) after
// the later of the two entries' last packet (timeouts.Timeout). A forward entry without
// its reverse entry (the table is read while it changes) has the
// unspecified address as its destination.
func ConnRows(conns []api.Conn, timeouts loadbalancer.Settings) []ConnRow {
	reverse := map[connKey]api.Conn{}
	for _, c := range conns {
		if c.Reverse {
			reverse[connKey{c.Protocol, c.Peer, c.To}] = c
		}
	}
	var rows []ConnRow
	for _, c := range conns {
		if c.Reverse {
			continue
		}
		row := ConnRow{Proto: strings.ToUpper(c.Protocol.String()), State: c.State.String(), Source: c.From, Virtual: c.To}
		idle := c.IdleSecs
		if r, ok := reverse[connKey{c.Protocol, row.Source, c.Peer}]; ok {
			row.Dest = r.From
			idle = min(idle, r.IdleSecs)
		} else {
			row.Dest = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
			if row.Source.Addr().Is6() {
				row.Dest = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
			}
		}
		timeout := timeouts.Timeout(c.State)
		if c.TimeoutSecs > 0 { // the data path's, which knows services' own
			timeout = time.Duration(c.TimeoutSecs * float64(time.Second))
		}
		left := timeout - time.Duration(idle*float64(time.Second))
		row.Expire = max(left, 0)
		rows = append(rows, row)
	}
	return rows
}

// WriteConns writes ipvsadm -L -c's listing. With --persistent-conn the
// title has ipvsadm's persistence-engine columns, which xlb's entries
// never fill (ipvsadm prints such entries in the plain layout too).
func WriteConns(w io.Writer, rows []ConnRow, o ListOptions) error {
	var b strings.Builder
	b.WriteString("IPVS connection entries\n")
	if o.PersistentConn {
		fmt.Fprintf(&b, "pro expire %-11s %-18s %-18s %-18s %-16s %s\n",
			"state", "source", "virtual", "destination", "pe name", "pe_data")
	} else {
		fmt.Fprintf(&b, "pro expire %-11s %-18s %-18s %s\n", "state", "source", "virtual", "destination")
	}
	for _, r := range rows {
		secs := int(r.Expire / time.Second)
		expire := fmt.Sprintf("%02d:%02d", secs/60, secs%60)
		fmt.Fprintf(&b, "%-3s %-6s %-11s %-18s %-18s %s\n", r.Proto, expire, r.State, r.Source, r.Virtual, r.Dest)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
