// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// The direct path: a veth pair from the client straight to real 1, with
// no balancer between them. What goes over it is the ceiling of the
// endpoints and applications themselves ("direct" in the reports).
const (
	DirectClientIf = "dc0" // the client's end
	DirectRealIf   = "dr0" // real 1's end
)

// directSubnet is the third octet of the direct link's /24.
const directSubnet = 200

// DirectClientAddr is the client's address on the direct link.
func (e *Env) DirectClientAddr() netip.Addr {
	return netip.AddrFrom4([4]byte{10, e.Topo.Net, directSubnet, 2})
}

// DirectRealAddr is real 1's address on the direct link.
func (e *Env) DirectRealAddr() netip.Addr {
	return netip.AddrFrom4([4]byte{10, e.Topo.Net, directSubnet, 1})
}

// UseTCP prepares the lab for connection-oriented traffic (the XDP
// endpoints and the real applications): the sinks leave the reals, whose
// kernels or endpoints answer instead; every balancer link takes frames
// the reals send back with XDP_TX (NewEnv turned GRO on, for the kernel
// DUTs); and the direct link is built. It is idempotent.
func (e *Env) UseTCP() error {
	if e.tcp {
		return nil
	}
	t := e.Topo
	for i := 1; i <= t.Reals; i++ {
		if err := e.Sink.Detach(t.Real(i), "r0"); err != nil {
			return err
		}
	}
	if err := netns.IPIn(t.Client(), "link", "add", DirectClientIf, "type", "veth", "peer", "name", DirectRealIf, "netns", t.Real(1)); err != nil {
		return fmt.Errorf("direct link: %w", err)
	}
	for _, end := range []struct {
		ns, ifname string
		addr       netip.Addr
	}{{t.Client(), DirectClientIf, e.DirectClientAddr()}, {t.Real(1), DirectRealIf, e.DirectRealAddr()}} {
		if err := netns.IPIn(end.ns, "addr", "add", end.addr.String()+"/24", "dev", end.ifname); err != nil {
			return err
		}
		if err := netns.IPIn(end.ns, "link", "set", end.ifname, "up"); err != nil {
			return err
		}
		// as on every lab link, offloads at Linux's defaults but GRO,
		// which the operator guide asks of every veth end that receives
		// XDP frames (here those the other end sends with XDP_TX)
		if _, err := e.RunIn(end.ns, "ethtool", "-K", end.ifname, "gro", "on"); err != nil {
			return err
		}
	}
	e.tcp = true
	return nil
}

// directDUT is no DUT at all: the client reaches real 1 over the direct
// link. Only the connection-oriented scenarios take it.
type directDUT struct{}

func (directDUT) Name() string                          { return "direct" }
func (directDUT) Balances() bool                        { return false }
func (directDUT) Setup(_ context.Context, e *Env) error { return e.UseTCP() }
func (directDUT) Teardown(*Env) error                   { return nil }
func (directDUT) Version(*Env) string {
	return "no balancer: client to real 1 over a veth pair of their own"
}
func (directDUT) Target(e *Env, _, _ bool) netip.Addr { return e.DirectRealAddr() }
func (directDUT) Alive(_ context.Context, e *Env) error {
	out, err := e.RunIn(e.Topo.Client(), "ip", "-br", "link", "show", DirectClientIf)
	if err == nil && !strings.Contains(out, "UP") {
		err = fmt.Errorf("direct link %s is down: %s", DirectClientIf, strings.TrimSpace(out))
	}
	return err
}
