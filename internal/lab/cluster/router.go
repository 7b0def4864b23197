// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The router is Debian's FRR (8.4): zebra, which installs routes in the
// router namespace's kernel, and bgpd, peering with every node. Its
// timers are short so that a lab notices a dead node in 3 s.
const (
	routerKeepalive = 1 // seconds
	routerHold      = 3
)

// FRRDir is where the router's configuration, sockets and logs are
// (vtysh --vty_socket takes it).
func (c Cluster) FRRDir() string { return filepath.Join(c.Dir(), "frr") }

// bgpdConf is the router's bgpd configuration: every node a peer of the
// NODES group, ECMP over up to 8 paths, graceful restart (as helper of
// the nodes: it keeps a restarting node's routes).
func (c Cluster) bgpdConf() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hostname %s\n", c.Router())
	fmt.Fprintf(&b, "router bgp %d\n", RouterASN)
	fmt.Fprintf(&b, " bgp router-id %s\n", c.RouterAddr())
	b.WriteString(" no bgp ebgp-requires-policy\n")
	b.WriteString(" bgp graceful-restart\n")
	b.WriteString(" bgp bestpath as-path multipath-relax\n")
	b.WriteString(" neighbor NODES peer-group\n")
	fmt.Fprintf(&b, " neighbor NODES remote-as %d\n", NodeASN)
	fmt.Fprintf(&b, " neighbor NODES timers %d %d\n", routerKeepalive, routerHold)
	b.WriteString(" neighbor NODES timers connect 1\n")
	for i := 1; i <= c.Nodes; i++ {
		fmt.Fprintf(&b, " neighbor %s peer-group NODES\n", c.NodeAddr(i))
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n")
	return b.String()
}

// startRouter writes the router's configuration and starts zebra and
// bgpd in its namespace as the frr user, with sockets of their own.
func (c Cluster) startRouter() error {
	dir := c.FRRDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// the daemons drop to the frr user, which must reach their directory
	if err := os.Chmod(c.Dir(), 0o755); err != nil {
		return err
	}
	if u, err := user.Lookup("frr"); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	} else {
		return fmt.Errorf("the router needs FRR (apt install frr): %w", err)
	}
	confs := map[string]string{"zebra": fmt.Sprintf("hostname %s\n", c.Router()), "bgpd": c.bgpdConf()}
	for _, d := range []string{"zebra", "bgpd"} {
		conf := filepath.Join(dir, d+".conf")
		if err := os.WriteFile(conf, []byte(confs[d]), 0o644); err != nil {
			return err
		}
		cmd := exec.Command("ip", "netns", "exec", c.Router(), "/usr/lib/frr/"+d, "-d", "-f", conf,
			"-i", filepath.Join(dir, d+".pid"), "-z", filepath.Join(dir, "zserv.api"), "--vty_socket", dir,
			"-u", "frr", "-g", "frr", "--log", "file:"+filepath.Join(dir, d+".log"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("start FRR %s in %s: %w: %s", d, c.Router(), err, out)
		}
		// bgpd connects to zebra's socket: wait for it
		if d == "zebra" {
			if err := awaitFile(filepath.Join(dir, "zserv.api"), 5*time.Second); err != nil {
				return fmt.Errorf("FRR zebra in %s: %w", c.Router(), err)
			}
		}
	}
	return nil
}

func awaitFile(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s missing after %v", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NextHops returns the next hops the router's kernel forwards prefix to
// (its FIB, as zebra installed it): several for an ECMP route, none when
// there is no route.
func (c Cluster) NextHops(prefix netip.Prefix) ([]netip.Addr, error) {
	out, err := exec.Command("ip", "-j", "-n", c.Router(), "route", "show", "exact", prefix.String()).Output()
	if err != nil {
		return nil, fmt.Errorf("ip route show %s in %s: %w", prefix, c.Router(), err)
	}
	var routes []struct {
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("ip -j route show: %w: %s", err, out)
	}
	var hops []netip.Addr
	for _, r := range routes {
		gws := []string{r.Gateway}
		for _, h := range r.Nexthops {
			gws = append(gws, h.Gateway)
		}
		for _, g := range gws {
			if a, err := netip.ParseAddr(g); err == nil {
				hops = append(hops, a)
			}
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops, nil
}

// AwaitNextHops waits, at most limit, until the router forwards prefix
// to exactly want (sorted), and returns what it last saw.
func (c Cluster) AwaitNextHops(prefix netip.Prefix, want []netip.Addr, limit time.Duration) ([]netip.Addr, error) {
	deadline := time.Now().Add(limit)
	for {
		got, err := c.NextHops(prefix)
		if err != nil {
			return nil, err
		}
		if slices.Equal(got, want) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("router: %s via %v after %v, want %v", prefix, got, limit, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
