// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// Topology names a lab and sizes it.
type Topology struct {
	Name  string // namespace prefix, e.g. "xlb" gives xlb-client, xlb-lb, xlb-real1
	Net   uint8  // second octet of every address (10.Net.0.0/16)
	Reals int    // number of real servers, 1..50
	// Bridge puts every real on one L2 segment behind the balancer's
	// interface l1: a bridge in a namespace of its own (<name>-sw), as a
	// switch in front of a server rack. Without it each real has a
	// point-to-point link of its own (l1, l2, ...).
	Bridge bool `json:",omitempty"`
}

// Default is the lab `xlb lab up` builds.
var Default = Topology{Name: "xlb", Net: 100, Reals: 3}

func (t Topology) validate() error {
	switch {
	case t.Name == "" || strings.ContainsAny(t.Name, "/ \t"):
		return fmt.Errorf("lab name %q: want a short word", t.Name)
	case t.Reals < 1 || t.Reals > 50:
		return fmt.Errorf("reals %d: want 1 to 50", t.Reals)
	}
	return nil
}

// Client, LB and Real name the namespaces.
func (t Topology) Client() string    { return t.Name + "-client" }
func (t Topology) LB() string        { return t.Name + "-lb" }
func (t Topology) Real(i int) string { return fmt.Sprintf("%s-real%d", t.Name, i) }
func (t Topology) Switch() string    { return t.Name + "-sw" }
func (t Topology) addr(c, d int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, t.Net, byte(c), byte(d)})
}

// addr6 is fd00:<net>:<c>::<d>, the IPv6 twin of addr.
func (t Topology) addr6(c, d int) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 0, t.Net, 0, byte(c), 14: byte(d >> 8), 15: byte(d)})
}

// ClientAddr is the client's address; VIP and LocalIP are the balancer's.
func (t Topology) ClientAddr() netip.Addr { return t.addr(1, 2) }
func (t Topology) VIP() netip.Addr        { return t.addr(0, 10) }
func (t Topology) LocalIP() netip.Addr    { return t.addr(2, 254) }

// ClientAddr6, VIP6 and LocalIP6 are their IPv6 twins.
func (t Topology) ClientAddr6() netip.Addr { return t.addr6(1, 2) }
func (t Topology) VIP6() netip.Addr        { return t.addr6(0, 0x10) }
func (t Topology) LocalIP6() netip.Addr    { return t.addr6(2, 0xfe) }

// bridgeNet is the third octet of the bridged reals' subnet.
const bridgeNet = 10

// RealAddr is real i's address (1-based); RealAddr6 its IPv6 address:
// 10.Net.(10+i).2 on a link of its own, 10.Net.10.(10+i) on the bridge.
func (t Topology) RealAddr(i int) netip.Addr {
	if t.Bridge {
		return t.addr(bridgeNet, 10+i)
	}
	return t.addr(10+i, 2)
}

func (t Topology) RealAddr6(i int) netip.Addr {
	if t.Bridge {
		return t.addr6(bridgeNet, 0x10+i)
	}
	return t.addr6(10+i, 2)
}

// prefixes are the lab's whole address ranges.
func (t Topology) prefixes() []string {
	return []string{fmt.Sprintf("10.%d.0.0/16", t.Net), fmt.Sprintf("fd00:%x::/32", t.Net)}
}

// LBInterfaces lists the balancer's interfaces: l0 to the client, then
// one per real.
func (t Topology) LBInterfaces() []string {
	out := []string{"l0"}
	if t.Bridge {
		return append(out, "l1")
	}
	for i := 1; i <= t.Reals; i++ {
		out = append(out, fmt.Sprintf("l%d", i))
	}
	return out
}

// Namespaces lists every namespace of the lab.
func (t Topology) Namespaces() []string {
	out := []string{t.Client(), t.LB()}
	for i := 1; i <= t.Reals; i++ {
		out = append(out, t.Real(i))
	}
	if t.Bridge {
		out = append(out, t.Switch())
	}
	return out
}

// Up builds the lab. On failure it removes what it built.
func (t Topology) Up() (err error) {
	if err := t.validate(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			t.Down()
		}
	}()
	if err := netns.Create(t.Name, t.prefixes(), t.Namespaces()); err != nil {
		return err
	}
	if err := t.save(); err != nil {
		return err
	}
	// forwarding on, as the operator guide asks of every balancer host:
	// bpf_fib_lookup answers "forwarding disabled" without it
	if err := netns.Sysctl(t.LB(), "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"); err != nil {
		return err
	}
	if err := t.link(t.Client(), "c0", "l0", 1, t.ClientAddr(), t.ClientAddr6()); err != nil {
		return err
	}
	if t.Bridge {
		if err := t.bridge(); err != nil {
			return err
		}
		return t.awaitLinkLocal()
	}
	for i := 1; i <= t.Reals; i++ {
		if err := t.link(t.Real(i), "r0", fmt.Sprintf("l%d", i), 10+i, t.RealAddr(i), t.RealAddr6(i)); err != nil {
			return err
		}
	}
	return t.awaitLinkLocal()
}

// link joins a node to the balancer over subnet c: node end nodeIf with
// addresses addr and addr6, balancer end lbIf with .1 and ::1, and the
// node's default routes through those.
func (t Topology) link(node, nodeIf, lbIf string, c int, addr, addr6 netip.Addr) error {
	gw, gw6 := t.addr(c, 1), t.addr6(c, 1)
	for _, c := range [][]string{
		{"link", "add", nodeIf, "netns", node, "type", "veth", "peer", "name", lbIf, "netns", t.LB()},
		{"-n", node, "addr", "add", addr.String() + "/24", "dev", nodeIf},
		{"-n", node, "addr", "add", addr6.String() + "/64", "dev", nodeIf, "nodad"},
		{"-n", t.LB(), "addr", "add", gw.String() + "/24", "dev", lbIf},
		{"-n", t.LB(), "addr", "add", gw6.String() + "/64", "dev", lbIf, "nodad"},
		{"-n", node, "link", "set", nodeIf, "up"},
		{"-n", t.LB(), "link", "set", lbIf, "up"},
		{"-n", node, "route", "add", "default", "via", gw.String()},
		{"-n", node, "-6", "route", "add", "default", "via", gw6.String()},
	} {
		if err := netns.IP(c...); err != nil {
			return err
		}
	}
	// Offloads stay at Linux's defaults (TX checksum offload on: xlb
	// completes partial checksums itself). The one change is the one the
	// operator guide asks for on every veth xlb redirects into: GRO on
	// the peer's end, without which veth drops redirected frames (the
	// peer would need an XDP program of its own instead).
	args := []string{"netns", "exec", node, "ethtool", "-K", nodeIf, "gro", "on"}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool -K %s gro on in %s: %w: %s", nodeIf, node, err, out)
	}
	return nil
}

// bridge joins the balancer's l1 and every real's r0 to a bridge in the
// switch namespace; the reals' default routes go through l1's addresses.
func (t Topology) bridge() error { return t.BridgeTo(t.LB(), "l1") }

// BridgeTo joins the interface gwIf of the namespace gwNS and every
// real's r0 to a bridge in the switch namespace, gwIf with the
// segment's .1 and ::1 addresses, which the reals route through.
func (t Topology) BridgeTo(gwNS, gwIf string) error {
	sw := t.Switch()
	gw, gw6 := t.addr(bridgeNet, 1), t.addr6(bridgeNet, 1)
	cmds := [][]string{
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"},
		{"link", "add", "s0", "netns", sw, "type", "veth", "peer", "name", gwIf, "netns", gwNS},
		{"-n", sw, "link", "set", "s0", "master", "br0", "up"},
		{"-n", gwNS, "addr", "add", gw.String() + "/24", "dev", gwIf},
		{"-n", gwNS, "addr", "add", gw6.String() + "/64", "dev", gwIf, "nodad"},
		{"-n", gwNS, "link", "set", gwIf, "up"},
	}
	for i := 1; i <= t.Reals; i++ {
		port, node := fmt.Sprintf("s%d", i), t.Real(i)
		cmds = append(cmds,
			[]string{"link", "add", port, "netns", sw, "type", "veth", "peer", "name", "r0", "netns", node},
			[]string{"-n", sw, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", node, "addr", "add", t.RealAddr(i).String() + "/24", "dev", "r0"},
			[]string{"-n", node, "addr", "add", t.RealAddr6(i).String() + "/64", "dev", "r0", "nodad"},
			[]string{"-n", node, "link", "set", "r0", "up"},
			[]string{"-n", node, "route", "add", "default", "via", gw.String()},
			[]string{"-n", node, "-6", "route", "add", "default", "via", gw6.String()})
	}
	for _, c := range cmds {
		if err := netns.IP(c...); err != nil {
			return err
		}
	}
	// the veth peer of l1 receives what xlb redirects: GRO on, as for
	// every such peer (see link)
	args := []string{"netns", "exec", sw, "ethtool", "-K", "s0", "gro", "on"}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool -K s0 gro on in %s: %w: %s", sw, err, out)
	}
	return nil
}

// SetMTU sets the MTU of every link of the lab, at both ends: the
// client's, the balancer's, the reals' (and a bridged lab's switch
// ports). A veth whose peer has a single-buffer XDP program refuses an
// MTU above one page's worth.
func (t Topology) SetMTU(mtu int) error {
	links := [][2]string{{t.Client(), "c0"}}
	for _, ifname := range t.LBInterfaces() {
		links = append(links, [2]string{t.LB(), ifname})
	}
	for i := 1; i <= t.Reals; i++ {
		links = append(links, [2]string{t.Real(i), "r0"})
		if t.Bridge {
			links = append(links, [2]string{t.Switch(), fmt.Sprintf("s%d", i)})
		}
	}
	if t.Bridge {
		links = append(links, [2]string{t.Switch(), "s0"})
	}
	for _, l := range links {
		if err := netns.IPIn(l[0], "link", "set", l[1], "mtu", strconv.Itoa(mtu)); err != nil {
			return fmt.Errorf("MTU %d on %s in %s: %w", mtu, l[1], l[0], err)
		}
	}
	return nil
}

// Down removes every namespace of the lab (and so its links); it reports
// only namespaces that exist and could not be removed.
func (t Topology) Down() error {
	t.RemoveDaemonFiles()
	// the switch namespace too, whatever Bridge says: a lab built
	// bridged and taken down through a copy made before is still removed
	all := t
	all.Bridge = true
	return netns.Destroy(t.prefixes(), all.Namespaces(), "TERM")
}

// Exec runs a command inside a node's network namespace. It uses
// nsenter rather than `ip netns exec`, which would give the command a
// /sys of its own: maps a daemon pins there would vanish with it.
func (t Topology) Exec(ns string, name string, args ...string) *exec.Cmd {
	return ExecIn(ns, name, args...)
}

// ExecIn is Exec without a lab: a command in the network namespace ns.
func ExecIn(ns string, name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + netns.Path(ns), "--", name}, args...)...)
}

// awaitLinkLocal waits, at most 5 s, until the balancer's IPv6 addresses
// are no longer tentative, as a host's network-online target does before
// services start: until its link-local address has passed duplicate
// address detection (1 to 2 s after the link came up), the kernel sends
// no neighbour solicitation from an interface, so no IPv6 real could be
// resolved.
func (t Topology) awaitLinkLocal() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := exec.Command("ip", "-n", t.LB(), "-6", "addr", "show", "tentative").Output()
		if err != nil {
			return fmt.Errorf("addresses of %s: %w", t.LB(), err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: IPv6 addresses still tentative after 5 s:\n%s", t.LB(), out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
