// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Env is the lab a bench run uses: the topology, the xlb binary for the
// xlb DUT, the sinks on every real and the generator in the client.
type Env struct {
	Topo topo.Topology
	Self string // the xlb binary
	Gen  *traffic.Generator
	Sink *traffic.Sink
	// Returns counts the answers that come back to the client (Answer)
	Returns *traffic.Sink

	clientMAC, lbMAC net.HardwareAddr
	tcp              bool // UseTCP has run
}

// NewEnv builds the lab, loads the generator, attaches a sink to every
// real's interface and gives the balancer permanent neighbour entries
// for the reals and the client (no DUT waits on neighbour discovery).
// Close removes it.
func NewEnv(topology topo.Topology, self string) (e *Env, err error) {
	e = &Env{Topo: topology, Self: self}
	if err := topology.Up(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.Gen, err = traffic.NewGenerator(); err != nil {
		return nil, err
	}
	if e.Sink, err = traffic.NewSink(); err != nil {
		return nil, err
	}
	for i := 1; i <= topology.Reals; i++ {
		if err := e.Sink.Attach(topology.Real(i), "r0"); err != nil {
			return nil, err
		}
		mac, err := netns.HardwareAddr(topology.Real(i), "r0")
		if err != nil {
			return nil, err
		}
		for _, a := range []string{topology.RealAddr(i).String(), topology.RealAddr6(i).String()} {
			if err := netns.IPIn(topology.LB(), "neigh", "replace", a, "lladdr", mac.String(), "dev", fmt.Sprintf("l%d", i), "nud", "permanent"); err != nil {
				return nil, err
			}
		}
	}
	// Destinations that vary (multi-flow L3 dst) through a forwarder
	// come from a block routed to real 1; sources that vary (L3 src)
	// from a block routed back to the client, so that answers to them
	// return (bidirectional trials). Each holds MaxAddressFlows. As the
	// reals', the client's neighbour entries are permanent: no DUT
	// waits on neighbour discovery.
	for _, r := range []struct{ block, via, dev string }{
		{routedBlock4, topology.RealAddr(1).String(), "l1"}, {routedBlock6(topology).String(), topology.RealAddr6(1).String(), "l1"},
		{sourceBlock4, topology.ClientAddr().String(), "l0"}, {sourceBlock6(topology).String(), topology.ClientAddr6().String(), "l0"},
	} {
		if err := netns.IPIn(topology.LB(), "route", "replace", r.block, "via", r.via, "dev", r.dev); err != nil {
			return nil, err
		}
	}
	if e.clientMAC, err = netns.HardwareAddr(topology.Client(), "c0"); err != nil {
		return nil, err
	}
	for _, a := range []netip.Addr{topology.ClientAddr(), topology.ClientAddr6()} {
		if err := netns.IPIn(topology.LB(), "neigh", "replace", a.String(), "lladdr", e.clientMAC.String(), "dev", "l0", "nud", "permanent"); err != nil {
			return nil, err
		}
	}
	// Kernel DUTs have no XDP program on the balancer's veths: veth then
	// receives the generator's XDP_TX frames (l0), and the answers the
	// reals' sinks and the direct link's XDP send back (l1...), only with
	// GRO on, as the operator guide asks of every veth receiving XDP
	// frames.
	for _, ifname := range topology.LBInterfaces() {
		if out, err := topology.Exec(topology.LB(), "ethtool", "-K", ifname, "gro", "on").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ethtool -K %s gro on: %w: %s", ifname, err, out)
		}
	}
	if e.lbMAC, err = netns.HardwareAddr(topology.LB(), "l0"); err != nil {
		return nil, err
	}
	return e, nil
}

// ClientMAC is the MAC address of the client's interface to the balancer.
func (e *Env) ClientMAC() net.HardwareAddr { return e.clientMAC }

// LBMAC is the MAC address of the balancer's interface to the client.
func (e *Env) LBMAC() net.HardwareAddr { return e.lbMAC }

// SetMTU sets the MTU of every lab link, for frames above 1518 bytes.
func (e *Env) SetMTU(mtu int) error {
	if err := e.Topo.SetMTU(mtu); err != nil {
		return fmt.Errorf("frames of %d bytes: %w", mtu+14+traffic.FCS, err)
	}
	return nil
}

// SenderOffloads turns TSO and GSO on or off on the veths of the lab's
// kernel senders, the client's c0 and every real's r0 (on is Linux's
// default). In generic mode the operator guide asks for off: an XDP
// program in generic mode sees a same-host sender's GSO super-packets,
// which no egress MTU takes.
func (e *Env) SenderOffloads(on bool) error {
	state := map[bool]string{true: "on", false: "off"}[on]
	t := e.Topo
	links := [][2]string{{t.Client(), "c0"}}
	for i := 1; i <= t.Reals; i++ {
		links = append(links, [2]string{t.Real(i), "r0"})
	}
	for _, l := range links {
		if _, err := e.RunIn(l[0], "ethtool", "-K", l[1], "tso", state, "gso", state); err != nil {
			return fmt.Errorf("TSO and GSO %s on %s in %s: %w", state, l[1], l[0], err)
		}
	}
	return nil
}

// RingDrops returns the frames veth could not queue for XDP: into the
// DUT (the client's sends the balancer's ring had no room for) and out
// of it (the balancer's redirects the reals' rings had no room for).
// They tell the lab's own loss from the DUT's.
func (e *Env) RingDrops() (into, outOf uint64, err error) {
	t := e.Topo
	if into, err = e.xmitErrors(t.Client(), "c0"); err != nil {
		return 0, 0, err
	}
	// the kernel's own sends (TCP) into an XDP peer's full ring are
	// counted as c0's transmit drops
	kernel, err := e.txDropped(t.Client(), "c0")
	if err != nil {
		return 0, 0, err
	}
	into += kernel
	for i := 1; i <= t.Reals; i++ {
		n, err := e.xmitErrors(t.LB(), fmt.Sprintf("l%d", i))
		if err != nil {
			return 0, 0, err
		}
		outOf += n
	}
	return into, outOf, nil
}

// txDropped is an interface's transmit drops (ip -s link).
func (e *Env) txDropped(ns, ifname string) (uint64, error) {
	out, err := e.RunIn(ns, "ip", "-s", "-j", "link", "show", "dev", ifname)
	if err != nil {
		return 0, err
	}
	var links []struct {
		Stats struct {
			TX struct {
				Dropped uint64 `json:"dropped"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		return 0, fmt.Errorf("ip -s -j link show %s in %s: %v", ifname, ns, err)
	}
	return links[0].Stats.TX.Dropped, nil
}

// xmitErrors sums a veth's XDP transmit errors (ethtool -S).
func (e *Env) xmitErrors(ns, ifname string) (uint64, error) {
	out, err := e.RunIn(ns, "ethtool", "-S", ifname)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.HasSuffix(k, "xdp_xmit_errors") {
			var n uint64
			fmt.Sscan(strings.TrimSpace(v), &n)
			sum += n
		}
	}
	return sum, nil
}

// MaxAddressFlows are the most flows that vary an address (L3): the
// addresses of a routed block counted up from its first.
const MaxAddressFlows = 1<<21 - 1

// routedBlock4 is the IPv4 block the balancer routes to real 1, the
// varied destinations', and sourceBlock4 the one it routes back to the
// client, the varied sources': the halves of RFC 6598's shared address
// space, never on the lab's links, 2M addresses each.
const (
	routedBlock4 = "100.64.0.0/11"
	sourceBlock4 = "100.96.0.0/11"
)

// routedBlock6 is the IPv6 block the balancer routes to real 1:
// fd00:NET:ffff::/48, outside every lab subnet.
func routedBlock6(t topo.Topology) netip.Prefix { return block6(t, 0xffff) }

// sourceBlock6 is the IPv6 block the balancer routes back to the
// client: fd00:NET:fffe::/48.
func sourceBlock6(t topo.Topology) netip.Prefix { return block6(t, 0xfffe) }

func block6(t topo.Topology, word uint16) netip.Prefix {
	b := t.RealAddr6(1).As16()
	b[4], b[5] = byte(word>>8), byte(word)
	for i := 6; i < 16; i++ {
		b[i] = 0
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), 48)
}

// routedTarget is the first address of the routed block of a family.
func routedTarget(e *Env, v6 bool) netip.Addr {
	if v6 {
		return routedBlock6(e.Topo).Addr().Next()
	}
	return netip.MustParsePrefix(routedBlock4).Addr().Next()
}

// VariedSource is the first of the client addresses that vary (L3 src
// flows), in the block the balancer routes back to the client.
func (e *Env) VariedSource(v6 bool) netip.Addr {
	if v6 {
		return sourceBlock6(e.Topo).Addr().Next()
	}
	return netip.MustParsePrefix(sourceBlock4).Addr().Next()
}

// Close detaches the sinks, releases the programs and removes the lab.
func (e *Env) Close() error {
	if e.Sink != nil {
		_ = e.Sink.Close()
	}
	if e.Returns != nil {
		_ = e.Returns.Close()
	}
	if e.Gen != nil {
		_ = e.Gen.Close()
	}
	return e.Topo.Down()
}

// Frame returns a frame from the client to dst:port, addressed to the
// balancer's MAC.
func (e *Env) Frame(size int, l4 traffic.L4, dst netip.Addr, port uint16) traffic.Frame {
	src := e.Topo.ClientAddr()
	if dst.Is6() {
		src = e.Topo.ClientAddr6()
	}
	return traffic.Frame{Size: size, L4: l4, SrcMAC: e.clientMAC, DstMAC: e.lbMAC,
		Src: netip.AddrPortFrom(src, 1024), Dst: netip.AddrPortFrom(dst, port)}
}

// RunIn runs a command in namespace ns and returns its output.
func (e *Env) RunIn(ns string, name string, args ...string) (string, error) {
	out, err := e.Topo.Exec(ns, name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
