// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab"
)

// Env is the lab a bench run uses: the topology, the xlb binary for the
// xlb DUT, the sinks on every real and the generator in the client.
type Env struct {
	Topo lab.Topology
	Self string // the xlb binary
	Gen  *Generator
	Sink *Sink

	clientMAC, lbMAC net.HardwareAddr
}

// NewEnv builds the lab, loads the generator, attaches a sink to every
// real's interface and gives the balancer permanent neighbour entries
// for the reals (no DUT waits on neighbour discovery). Close removes it.
func NewEnv(topo lab.Topology, self string) (e *Env, err error) {
	e = &Env{Topo: topo, Self: self}
	if err := topo.Up(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.Gen, err = NewGenerator(); err != nil {
		return nil, err
	}
	if e.Sink, err = NewSink(); err != nil {
		return nil, err
	}
	for i := 1; i <= topo.Reals; i++ {
		if err := e.Sink.Attach(topo.Real(i), "r0"); err != nil {
			return nil, err
		}
		mac, err := macOf(topo.Real(i), "r0")
		if err != nil {
			return nil, err
		}
		for _, a := range []string{topo.RealAddr(i).String(), topo.RealAddr6(i).String()} {
			if err := ipIn(topo.LB(), "neigh", "replace", a, "lladdr", mac.String(), "dev", fmt.Sprintf("l%d", i), "nud", "permanent"); err != nil {
				return nil, err
			}
		}
	}
	// Kernel DUTs have no XDP program on l0: veth then receives the
	// generator's XDP_TX frames only with GRO on.
	if out, err := topo.Exec(topo.LB(), "ethtool", "-K", "l0", "gro", "on").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ethtool -K l0 gro on: %w: %s", err, out)
	}
	if e.clientMAC, err = macOf(topo.Client(), "c0"); err != nil {
		return nil, err
	}
	if e.lbMAC, err = macOf(topo.LB(), "l0"); err != nil {
		return nil, err
	}
	return e, nil
}

// Close detaches the sinks, releases the programs and removes the lab.
func (e *Env) Close() error {
	if e.Sink != nil {
		_ = e.Sink.Close()
	}
	if e.Gen != nil {
		_ = e.Gen.Close()
	}
	return e.Topo.Down()
}

// Frame returns a frame from the client to dst:port, addressed to the
// balancer's MAC.
func (e *Env) Frame(size int, l4 L4, dst netip.Addr, port uint16) Frame {
	src := e.Topo.ClientAddr()
	if dst.Is6() {
		src = e.Topo.ClientAddr6()
	}
	return Frame{Size: size, L4: l4, SrcMAC: e.clientMAC, DstMAC: e.lbMAC,
		Src: netip.AddrPortFrom(src, 1024), Dst: netip.AddrPortFrom(dst, port)}
}

func macOf(ns, ifname string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := lab.InNamespace(ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("MAC of %s in %s: %w", ifname, ns, err)
	}
	return mac, nil
}

// ipIn runs ip(8) in namespace ns.
func ipIn(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %w: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// run runs a command in namespace ns and returns its output.
func (e *Env) run(ns string, name string, args ...string) (string, error) {
	out, err := e.Topo.Exec(ns, name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
