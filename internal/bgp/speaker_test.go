// SPDX-License-Identifier: Apache-2.0

package bgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/xlb-dev/xlb/internal/config"
)

// router is a GoBGP speaker in the test that plays the router: it
// accepts the node's session on loopback and keeps what it learns.
type router struct {
	srv  *server.BgpServer
	port int
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startRouter(t *testing.T, nodeASN uint32, gr bool) *router {
	t.Helper()
	port := freePort(t)
	srv := server.NewBgpServer()
	go srv.Serve()
	if err := srv.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{
		Asn: 65000, RouterId: "192.0.2.254", ListenPort: int32(port), ListenAddresses: []string{"127.0.0.1"},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	peer := &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: nodeASN},
		Transport: &api.Transport{PassiveMode: true},
		AfiSafis: []*api.AfiSafi{
			{Config: &api.AfiSafiConfig{Family: familyIPv4, Enabled: true}},
			{Config: &api.AfiSafiConfig{Family: familyIPv6, Enabled: true}},
		},
	}
	if gr {
		peer.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: 30}
		for _, as := range peer.AfiSafis {
			as.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
	}
	if err := srv.AddPeer(context.Background(), &api.AddPeerRequest{Peer: peer}); err != nil {
		t.Fatal(err)
	}
	return &router{srv: srv, port: port}
}

// learnt is one route the router holds: its prefix, next hop, AS path
// and communities.
type learnt struct {
	prefix      string
	nextHop     string
	asPath      string
	communities string
}

func (r *router) routes(t *testing.T) []learnt {
	t.Helper()
	var out []learnt
	for _, fam := range []bgp.Family{bgp.RF_IPv4_UC, bgp.RF_IPv6_UC} {
		err := r.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: fam},
			func(prefix bgp.NLRI, paths []*apiutil.Path) {
				for _, p := range paths {
					l := learnt{prefix: prefix.String()}
					for _, a := range p.Attrs {
						switch a := a.(type) {
						case *bgp.PathAttributeNextHop:
							l.nextHop = a.Value.String()
						case *bgp.PathAttributeMpReachNLRI:
							l.nextHop = a.Nexthop.String()
						case *bgp.PathAttributeAsPath:
							l.asPath = strings.TrimSuffix(strings.TrimPrefix(a.String(), "{AsPath: "), "}")
						case *bgp.PathAttributeCommunities:
							l.communities = strings.TrimSuffix(strings.TrimPrefix(a.String(), "{Communities: "), "}")
						}
					}
					out = append(out, l)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(out, func(a, b learnt) int { return strings.Compare(a.prefix, b.prefix) })
	return out
}

// await polls the router until its routes are want.
func (r *router) await(t *testing.T, what string, want []learnt) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got []learnt
	for time.Now().Before(deadline) {
		if got = r.routes(t); slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: the router holds\n%+v\nwant\n%+v", what, got, want)
}

func nodeSettings(routerPort int, gr time.Duration) config.BGPSettings {
	return config.BGPSettings{
		ASN: 65001, RouterID: netip.MustParseAddr("192.0.2.1"), RestartTime: gr,
		NextHop6: netip.MustParseAddr("2001:db8::1"),
		Peers: []config.BGPPeerSettings{{Address: netip.MustParseAddr("127.0.0.1"), ASN: 65000,
			Port: uint16(routerPort), HoldTime: 9 * time.Second}},
	}
}

func awaitEstablished(t *testing.T, s *Speaker) PeerStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if p := s.Peers(); len(p) == 1 && p[0].Established() {
			return p[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the session never came up: %+v", s.Peers())
	return PeerStatus{}
}

// TestAnnounceAndWithdraw follows a set of routes to the router: added,
// changed, withdrawn, and all gone when the speaker stops.
func TestAnnounceAndWithdraw(t *testing.T) {
	r := startRouter(t, 65001, false)
	s, err := Start(nodeSettings(r.port, 0), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	p := awaitEstablished(t, s)
	if p.ASN != 65000 || p.Address != netip.MustParseAddr("127.0.0.1") || p.Since.IsZero() {
		t.Errorf("peer status %+v", p)
	}

	vip := Route{Prefix: netip.MustParsePrefix("198.51.100.10/32"), Communities: []uint32{65000<<16 | 100}}
	vip6 := Route{Prefix: netip.MustParsePrefix("2001:db8:10::10/128")}
	laddr := Route{Prefix: netip.MustParsePrefix("10.0.2.11/32")}
	backup := Route{Prefix: netip.MustParsePrefix("10.0.2.12/32"), Prepend: 2}
	if err := s.Announce([]Route{vip, vip6, laddr, backup}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "announced", []learnt{
		{"10.0.2.11/32", "127.0.0.1", "65001", ""},
		{"10.0.2.12/32", "127.0.0.1", "65001 65001 65001", ""},
		{"198.51.100.10/32", "127.0.0.1", "65001", "65000:100"},
		{"2001:db8:10::10/128", "2001:db8::1", "65001", ""},
	})
	if got := awaitEstablished(t, s).Advertised; got != 4 {
		t.Errorf("advertised %d routes, want 4", got)
	}

	// the VIP withdrawn, the backup made primary
	backup.Prepend = 0
	if err := s.Announce([]Route{vip6, laddr, backup}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "withdrawn", []learnt{
		{"10.0.2.11/32", "127.0.0.1", "65001", ""},
		{"10.0.2.12/32", "127.0.0.1", "65001", ""},
		{"2001:db8:10::10/128", "2001:db8::1", "65001", ""},
	})
	if got := fmt.Sprint(s.Announced()); !strings.Contains(got, "10.0.2.12/32") || strings.Contains(got, "198.51.100.10") {
		t.Errorf("Announced() = %s", got)
	}

	s.Stop()
	r.await(t, "after stop", nil)
	if err := s.Announce([]Route{vip}); err == nil {
		t.Error("a stopped speaker announced")
	}
}

// TestSetPeers removes the only peer and adds it again: the session
// goes and comes back, and the routes with it.
func TestSetPeers(t *testing.T) {
	r := startRouter(t, 65001, false)
	cfg := nodeSettings(r.port, 0)
	s, err := Start(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	awaitEstablished(t, s)
	vip := Route{Prefix: netip.MustParsePrefix("198.51.100.10/32")}
	if err := s.Announce([]Route{vip}); err != nil {
		t.Fatal(err)
	}
	want := []learnt{{"198.51.100.10/32", "127.0.0.1", "65001", ""}}
	r.await(t, "announced", want)
	if err := s.SetPeers(nil); err != nil {
		t.Fatal(err)
	}
	r.await(t, "without the peer", nil)
	if p := s.Peers(); len(p) != 0 {
		t.Errorf("peers after removal: %+v", p)
	}
	if err := s.SetPeers(cfg.Peers); err != nil {
		t.Fatal(err)
	}
	awaitEstablished(t, s)
	r.await(t, "peer back", want)
}
