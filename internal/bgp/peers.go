// SPDX-License-Identifier: Apache-2.0

package bgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// PeerStatus is a peer and its session.
type PeerStatus struct {
	Address netip.Addr
	ASN     uint32
	// State is the session's state as RFC 4271 names it, lower case:
	// idle, connect, active, opensent, openconfirm or established.
	State string
	// Since is when the session came up (established) or went down.
	Since time.Time
	// Advertised counts the routes the peer was sent and holds.
	Advertised uint64
	// LastError is why the session last went down, if it did.
	LastError string
	// GracefulRestart says that both sides announced the capability.
	GracefulRestart bool
}

// Established reports whether the session is up.
func (p PeerStatus) Established() bool { return p.State == "established" }

// Peers returns the peers' status, by address.
func (s *Speaker) Peers() []PeerStatus {
	var out []PeerStatus
	_ = s.srv.ListPeer(context.Background(), &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		if p.Conf == nil || p.State == nil {
			return
		}
		a, err := netip.ParseAddr(p.Conf.NeighborAddress)
		if err != nil {
			return
		}
		st := PeerStatus{Address: a, ASN: p.Conf.PeerAsn, State: sessionState(p.State.SessionState)}
		if t := p.Timers.GetState(); t != nil {
			if st.Established() && t.Uptime != nil {
				st.Since = t.Uptime.AsTime()
			} else if !st.Established() && t.Downtime != nil {
				st.Since = t.Downtime.AsTime()
			}
		}
		for _, as := range p.AfiSafis {
			if as.State != nil {
				st.Advertised += as.State.Advertised
			}
		}
		if !st.Established() {
			st.LastError = p.State.DisconnectMessage
		}
		gr := p.GracefulRestart
		st.GracefulRestart = gr != nil && gr.Enabled && gr.PeerRestartTime > 0
		out = append(out, st)
	})
	slices.SortFunc(out, func(a, b PeerStatus) int { return a.Address.Compare(b.Address) })
	return out
}

func sessionState(s api.PeerState_SessionState) string {
	name := strings.TrimPrefix(s.String(), "SESSION_STATE_")
	if name == "UNSPECIFIED" || name == "" {
		return "idle"
	}
	return strings.ToLower(name)
}
