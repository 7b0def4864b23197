// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"

	"github.com/xlb-dev/xlb/internal/hoststate"
)

// hostAddrDev is where the daemon puts IPv4 VIPs and local IPs: on the
// loopback device the kernel owns them and answers ARP for them on every
// interface (arp_ignore 0) without routing anything through it. IPv6
// answers neighbour solicitations only for addresses of the interface
// asked, so IPv6 addresses go on every attached interface instead.
const hostAddrDev = "lo"

// hostAddrSet adds and removes the VIPs and local IPs on the host. What
// it added is in the host state record (next to the pins), written before
// each add and cleared after each removal, so that the daemon after a
// crash takes over the addresses the dead one added instead of failing on
// them, and a stop removes them. An address the host had before is used
// as it is and never removed.
type hostAddrSet struct {
	ifaces []string // the attached interfaces, for IPv6 addresses
	record *hoststate.Record
	// ip runs ip(8) with args; tests replace it to inject failures
	ip func(args ...string) ([]byte, error)
}

func runIP(args ...string) ([]byte, error) { return exec.Command("ip", args...).CombinedOutput() }

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

var errHostOwns = errors.New("the host has this address already")

// ipAddr adds or deletes address a on dev. An add the kernel refuses
// because the address is there is errHostOwns; a delete of an address
// that is not there succeeds.
func (h *hostAddrSet) ipAddr(verb string, a netip.Addr, dev string) error {
	args := []string{"addr", verb, prefixOf(a), "dev", dev}
	if a.Is6() && verb == "add" {
		args = append(args, "nodad") // ours at once, not tentative
	}
	run := h.ip
	if run == nil {
		run = runIP
	}
	out, err := run(args...)
	if err == nil {
		return nil
	}
	msg := strings.ToLower(string(out))
	switch {
	case verb == "add" && (strings.Contains(msg, "file exists") || strings.Contains(msg, "already assigned")):
		return errHostOwns
	case verb == "del" && (strings.Contains(msg, "cannot assign requested address") || strings.Contains(msg, "not found") ||
		strings.Contains(msg, "cannot find device")):
		return nil
	}
	return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
}

// recorded is the set of entries the record holds.
func (h *hostAddrSet) recorded() map[hoststate.Entry]bool {
	out := map[hoststate.Entry]bool{}
	for _, e := range h.record.List(hoststate.Address) {
		out[e] = true
	}
	return out
}

// add puts every address of want on its devices. It is all or nothing:
// on an error the addresses this call added are removed again (an IPv6
// address already on the first interface when the second refuses it
// included), and the error names the one that failed.
func (h *hostAddrSet) add(want []netip.Addr) error {
	have := h.recorded()
	var added []hoststate.Entry
	for _, a := range want {
		for _, dev := range h.devs(a) {
			e := hoststate.Entry{Kind: hoststate.Address, Dev: dev, Addr: a}
			if have[e] {
				continue
			}
			err := h.record.Add(e)
			if err == nil {
				err = h.ipAddr("add", a, dev)
			}
			if errors.Is(err, errHostOwns) {
				err = h.record.Remove(e) // the host's own: used, never removed
			} else if err == nil {
				added = append(added, e)
				continue
			} else {
				err = errors.Join(err, h.record.Remove(e))
			}
			if err != nil {
				return errors.Join(fmt.Errorf("host address %s on %s: %w", a, dev, err), h.remove(added))
			}
		}
	}
	return nil
}

// prune removes the recorded addresses want does not have (or not on that
// device any more). It goes on after an error and returns them all; an
// address it could not remove stays recorded, to be removed later.
func (h *hostAddrSet) prune(want []netip.Addr) error {
	keep := map[hoststate.Entry]bool{}
	for _, a := range want {
		for _, dev := range h.devs(a) {
			keep[hoststate.Entry{Kind: hoststate.Address, Dev: dev, Addr: a}] = true
		}
	}
	var gone []hoststate.Entry
	for _, e := range h.record.List(hoststate.Address) {
		if !keep[e] {
			gone = append(gone, e)
		}
	}
	return h.remove(gone)
}

// remove deletes entries from the host and then from the record.
func (h *hostAddrSet) remove(entries []hoststate.Entry) error {
	var errs []error
	for _, e := range slices.Backward(entries) {
		if err := h.ipAddr("del", e.Addr, e.Dev); err != nil {
			errs = append(errs, fmt.Errorf("remove host address %s from %s: %w", e.Addr, e.Dev, err))
			continue
		}
		errs = append(errs, h.record.Remove(e))
	}
	return errors.Join(errs...)
}

// sync adds what want lacks, then removes what it no longer has.
func (h *hostAddrSet) sync(want []netip.Addr) error {
	if err := h.add(want); err != nil {
		return err
	}
	return h.prune(want)
}
