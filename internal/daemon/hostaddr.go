// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// hostAddrDev is where the daemon puts VIPs and local IPs: on the loopback
// device the kernel owns them (answers ARP and neighbour solicitations for
// them on every interface) without routing anything through it.
const hostAddrDev = "lo"

// hostAddrs tracks the addresses the daemon added, so that it removes
// those and only those.
type hostAddrSet struct {
	added map[netip.Addr]bool
}

func prefixOf(a netip.Addr) string {
	if a.Is4() {
		return a.String() + "/32"
	}
	return a.String() + "/128"
}

func ipAddr(verb string, a netip.Addr) error {
	out, err := exec.Command("ip", "addr", verb, prefixOf(a), "dev", hostAddrDev).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip addr %s %s dev %s: %w: %s", verb, prefixOf(a), hostAddrDev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sync makes the added set equal want: adds what is missing, removes what
// the daemon added and is no longer wanted. An address the host had
// already is used as it is and never removed.
func (h *hostAddrSet) sync(want []netip.Addr) error {
	if h.added == nil {
		h.added = map[netip.Addr]bool{}
	}
	keep := map[netip.Addr]bool{}
	for _, a := range want {
		keep[a] = true
		if h.added[a] {
			continue
		}
		err := ipAddr("add", a)
		if err != nil && strings.Contains(err.Error(), "File exists") {
			continue // the host's own
		}
		if err != nil {
			return err
		}
		h.added[a] = true
	}
	for a := range h.added {
		if !keep[a] {
			if err := ipAddr("del", a); err != nil {
				return err
			}
			delete(h.added, a)
		}
	}
	return nil
}
