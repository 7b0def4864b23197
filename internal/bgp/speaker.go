// SPDX-License-Identifier: Apache-2.0

// Package bgp is the node's BGP speaker: GoBGP embedded as a library,
// which announces a set of host routes (the VIPs and the local IPs) to
// the configured peers. The daemon decides what is announced; the
// speaker keeps the announcements equal to the last set it was given.
//
// A daemon that hands over or crashes does not stop the speaker: its
// sessions end without a NOTIFICATION, and peers that negotiated
// graceful restart (RFC 4724) keep its routes until the next daemon
// announces them again (Restarting). A stopping daemon withdraws first
// and then stops the speaker, which sends a Cease.
package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/xlb-dev/xlb/internal/config"
)

// Route is a host route the node announces.
type Route struct {
	Prefix      netip.Prefix
	Communities []uint32
	// Prepend is how many more times the node's AS number goes in the
	// AS path: a longer path is a backup routers use only without a
	// shorter one.
	Prepend int
}

func (r Route) equal(o Route) bool {
	return r.Prefix == o.Prefix && r.Prepend == o.Prepend && slices.Equal(r.Communities, o.Communities)
}

// Options are how a speaker starts besides its settings.
type Options struct {
	// Restarting sets the restart state bit of the graceful-restart
	// capability: the daemon took over a data path that kept
	// forwarding, so peers keep the routes they hold until this speaker
	// has sent its own.
	Restarting bool
	// Log receives GoBGP's warnings and errors.
	Log *slog.Logger
}

// Speaker is a running BGP speaker. Its methods are safe for concurrent
// use.
type Speaker struct {
	srv *server.BgpServer
	cfg config.BGPSettings

	mu        sync.Mutex
	peers     map[netip.Addr]config.BGPPeerSettings
	announced map[netip.Prefix]Route
	stopped   bool
}

// connectRetry is how soon a speaker tries a peer again after a failed
// connection (GoBGP's default is 120 s, too slow to come back after a
// router restart).
const connectRetry = 5 * time.Second

// deferral bounds how long a restarting speaker waits for its peers'
// End-of-RIB before it announces its routes.
const deferral = 5 * time.Second

// Start starts a speaker with the settings' peers and nothing announced.
func Start(cfg config.BGPSettings, opts Options) (*Speaker, error) {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	lvl := &slog.LevelVar{}
	lvl.Set(slog.LevelWarn)
	quiet := slog.New(levelHandler{Handler: log.Handler(), min: lvl}).With("component", "gobgp")
	srv := server.NewBgpServer(server.LoggerOption(quiet, lvl))
	go srv.Serve()
	listen := int32(-1)
	if cfg.ListenPort != 0 {
		listen = int32(cfg.ListenPort)
	}
	if err := srv.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{
		Asn: cfg.ASN, RouterId: cfg.RouterID.String(), ListenPort: listen,
	}}); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("start BGP: %w", err)
	}
	s := &Speaker{srv: srv, cfg: cfg, peers: map[netip.Addr]config.BGPPeerSettings{}, announced: map[netip.Prefix]Route{}}
	for _, p := range cfg.Peers {
		if err := s.addPeer(p, opts.Restarting); err != nil {
			srv.Stop()
			return nil, err
		}
	}
	return s, nil
}

// SetPeers changes the peers to peers: a peer that is gone or changed
// is removed (its session ends), a new or changed one added.
func (s *Speaker) SetPeers(peers []config.BGPPeerSettings) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[netip.Addr]config.BGPPeerSettings{}
	for _, p := range peers {
		want[p.Address] = p
	}
	var errs []error
	for a, cur := range s.peers {
		if w, ok := want[a]; ok && w == cur {
			continue
		}
		if err := s.srv.DeletePeer(context.Background(), &api.DeletePeerRequest{Address: a.String()}); err != nil {
			errs = append(errs, fmt.Errorf("remove BGP peer %s: %w", a, err))
			continue
		}
		delete(s.peers, a)
	}
	for _, p := range peers {
		if _, ok := s.peers[p.Address]; !ok {
			errs = append(errs, s.addPeer(p, false))
		}
	}
	return errors.Join(errs...)
}

// addPeer adds a peer; s.mu is held or s not yet shared.
func (s *Speaker) addPeer(p config.BGPPeerSettings, restarting bool) error {
	hold := uint64(p.HoldTime / time.Second)
	peer := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: p.ASN, AuthPassword: p.Password},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime: hold, KeepaliveInterval: hold / 3,
			ConnectRetry: uint64(connectRetry / time.Second), IdleHoldTimeAfterReset: 1,
		}},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
	}
	if p.MultihopTTL > 0 {
		peer.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.MultihopTTL)}
	}
	gr := s.cfg.RestartTime > 0
	if gr {
		peer.GracefulRestart = &api.GracefulRestart{
			Enabled: true, RestartTime: uint32(s.cfg.RestartTime / time.Second),
			DeferralTime: uint32(deferral / time.Second), LocalRestarting: restarting,
		}
	}
	for _, fam := range s.families(p.Address) {
		as := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: fam, Enabled: true}}
		if gr {
			as.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		peer.AfiSafis = append(peer.AfiSafis, as)
	}
	if err := s.srv.AddPeer(context.Background(), &api.AddPeerRequest{Peer: peer}); err != nil {
		return fmt.Errorf("add BGP peer %s: %w", p.Address, err)
	}
	s.peers[p.Address] = p
	return nil
}

var (
	familyIPv4 = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	familyIPv6 = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
)

// families are the address families of a session: its own, and the
// other when a next hop of that family is configured (a session over
// IPv4 cannot name an IPv6 next hop of its own).
func (s *Speaker) families(peer netip.Addr) []*api.Family {
	if peer.Is4() {
		if s.cfg.NextHop6.IsValid() {
			return []*api.Family{familyIPv4, familyIPv6}
		}
		return []*api.Family{familyIPv4}
	}
	if s.cfg.NextHop4.IsValid() {
		return []*api.Family{familyIPv6, familyIPv4}
	}
	return []*api.Family{familyIPv6}
}

// Announce makes the announced routes routes: it announces the new and
// changed ones and withdraws those not in routes.
func (s *Speaker) Announce(routes []Route) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("announce: the BGP speaker is stopped")
	}
	want := map[netip.Prefix]Route{}
	for _, r := range routes {
		want[r.Prefix] = r
	}
	var add, del []*apiutil.Path
	for p, r := range want {
		if cur, ok := s.announced[p]; ok && cur.equal(r) {
			continue
		}
		path, err := s.path(r)
		if err != nil {
			return err
		}
		add = append(add, path)
	}
	for p, r := range s.announced {
		if _, ok := want[p]; ok {
			continue
		}
		path, err := s.path(r)
		if err != nil {
			return err
		}
		del = append(del, path)
	}
	if len(add) > 0 {
		if _, err := s.srv.AddPath(apiutil.AddPathRequest{Paths: add}); err != nil {
			return fmt.Errorf("announce: %w", err)
		}
	}
	if len(del) > 0 {
		if err := s.srv.DeletePath(apiutil.DeletePathRequest{Paths: del}); err != nil {
			return fmt.Errorf("withdraw: %w", err)
		}
	}
	s.announced = want
	return nil
}

// Announced returns the routes announced, by prefix.
func (s *Speaker) Announced() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.announced))
	slices.SortFunc(out, func(a, b Route) int { return a.Prefix.Addr().Compare(b.Prefix.Addr()) })
	return out
}

// path builds the path of a route: origin IGP, the AS path of the
// prepends (the speaker adds its AS number once more towards eBGP
// peers), the next hop and the communities.
func (s *Speaker) path(r Route) (*apiutil.Path, error) {
	nlri, err := bgp.NewIPAddrPrefix(r.Prefix)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", r.Prefix, err)
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)}
	if r.Prepend > 0 {
		asns := make([]uint32, r.Prepend)
		for i := range asns {
			asns[i] = s.cfg.ASN
		}
		attrs = append(attrs, bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{
			bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, asns)}))
	}
	family := bgp.RF_IPv4_UC
	if r.Prefix.Addr().Is4() {
		nh := cmpAddr(s.cfg.NextHop4, netip.IPv4Unspecified())
		a, err := bgp.NewPathAttributeNextHop(nh)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Prefix, err)
		}
		attrs = append(attrs, a)
	} else {
		family = bgp.RF_IPv6_UC
		nh := cmpAddr(s.cfg.NextHop6, netip.IPv6Unspecified())
		a, err := bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, nh)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Prefix, err)
		}
		attrs = append(attrs, a)
	}
	if len(r.Communities) > 0 {
		attrs = append(attrs, bgp.NewPathAttributeCommunities(r.Communities))
	}
	return &apiutil.Path{Family: family, Nlri: nlri, Attrs: attrs}, nil
}

func cmpAddr(a, fallback netip.Addr) netip.Addr {
	if a.IsValid() {
		return a
	}
	return fallback
}

// Stop withdraws every route and ends the sessions with a Cease: peers
// drop the routes at once, graceful restart or not.
func (s *Speaker) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.srv.Stop()
}

// levelHandler passes on the records at min and above: GoBGP logs every
// session event at info, which the daemon's log reports its own way.
type levelHandler struct {
	slog.Handler
	min slog.Leveler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min.Level() && h.Handler.Enabled(ctx, l)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}
