// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/hoststate"
)

// hostOwns returns what validation asks of the host (config.Env): does it
// have an address of its own? Its own are the addresses of its
// interfaces less those the daemon added (VIPs and local IPs it put on
// lo or on the attached interfaces, in the record: an earlier run's,
// taken over after a crash, included). The interfaces are listed once, so
// one apply sees one list; d.mu is held. When they cannot be listed no
// address is known, and the log says so.
func (d *Daemon) hostOwns() apply.HostOwns {
	owns, err := hostOwnsBesides(d.addrs.record)
	if err != nil {
		d.log.Warn("VIPs not checked against the host's addresses", "err", err)
		return nil
	}
	return owns
}

// hostOwnsBesides tells the host's addresses but those rec (nil: none)
// lists as added by xlb.
func hostOwnsBesides(rec *hoststate.Record) (apply.HostOwns, error) {
	have, err := interfaceAddrs()
	if err != nil {
		return nil, err
	}
	ours := map[netip.Addr]bool{}
	if rec != nil {
		for _, e := range rec.List(hoststate.Address) {
			ours[e.Addr] = true
		}
	}
	return func(a netip.Addr) bool { return have[a] && !ours[a] }, nil
}

// interfaceAddrs returns the addresses of every interface of the host
// (of its network namespace).
func interfaceAddrs() (map[netip.Addr]bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's addresses: %w", err)
	}
	out := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(n.IP); ok {
			out[ip.Unmap()] = true
		}
	}
	return out, nil
}
