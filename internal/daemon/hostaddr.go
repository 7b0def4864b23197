// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// hostAddrDev is where the daemon puts IPv4 VIPs and local IPs: on the
// loopback device the kernel owns them and answers ARP for them on every
// interface (arp_ignore 0) without routing anything through it. IPv6
// answers neighbour solicitations only for addresses of the interface
// asked, so IPv6 addresses go on every attached interface instead.
const hostAddrDev = "lo"

// hostAddrSet tracks the addresses the daemon added, so that it removes
// those and only those.
type hostAddrSet struct {
	ifaces []string // the attached interfaces, for IPv6 addresses
	added  map[netip.Addr]bool
}

// devs are the devices address a goes on.
func (h *hostAddrSet) devs(a netip.Addr) []string {
	if a.Is4() || len(h.ifaces) == 0 {
		return []string{hostAddrDev}
	}
	return h.ifaces
}

func prefixOf(a netip.Addr) string {
	if a.Is4() {
		return a.String() + "/32"
	}
	return a.String() + "/128"
}

// ipAddr adds or deletes a on every device of devs; "File exists" on
// add means the host has it already and is reported as errHostOwns.
func ipAddr(verb string, a netip.Addr, devs []string) error {
	for _, dev := range devs {
		args := []string{"addr", verb, prefixOf(a), "dev", dev}
		if a.Is6() && verb == "add" {
			args = append(args, "nodad") // ours at once, not tentative
		}
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil && verb == "add" && strings.Contains(string(out), "File exists") {
			return errHostOwns
		}
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

var errHostOwns = errors.New("the host has this address already")

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
		err := ipAddr("add", a, h.devs(a))
		if errors.Is(err, errHostOwns) {
			continue // the host's own
		}
		if err != nil {
			return err
		}
		h.added[a] = true
	}
	for a := range h.added {
		if !keep[a] {
			if err := ipAddr("del", a, h.devs(a)); err != nil {
				return err
			}
			delete(h.added, a)
		}
	}
	return nil
}
