// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Local IP ranges, as keepalived's laddr_group (DPVS) writes them: an
// address, a dash and the last part of the range's last address, the
// last octet in decimal for IPv4 (10.0.3.100-149) or the last 16-bit
// group in hex for IPv6 (2001:db8::100-1ff).

// maxRangeAddrs bounds one range, so that a typo cannot ask for 65536
// addresses before the capacity check sees them.
const maxRangeAddrs = 4096

// ParseLocalIPs reads one local_ips entry, an address or a range, as the
// configuration does. It returns the entry as the configuration keeps it
// (an address in its canonical form, a range as written) and its first
// address; the command lines that take local addresses use it. The
// error names what is wrong with the entry.
func ParseLocalIPs(entry string) (canon string, first netip.Addr, err error) {
	entry = strings.TrimSpace(entry)
	addrs, isRange, err := entryAddrs(entry)
	if err != nil {
		return "", netip.Addr{}, err
	}
	first = addrs[0].Unmap()
	if !isRange {
		entry = first.String()
	}
	return entry, first, nil
}

// localIPAddrs returns the addresses a local_ips entry stands for, a
// range expanded; an entry it cannot read (the service's own check
// reports it) stands for none.
func localIPAddrs(entry string) []netip.Addr {
	addrs, _, err := entryAddrs(entry)
	if err != nil {
		return nil
	}
	return addrs
}

// entryAddrs reads a local_ips entry: its addresses, in order, and
// whether it is a range.
func entryAddrs(entry string) (addrs []netip.Addr, isRange bool, err error) {
	strs, isRange, err := expandRange(entry)
	if err != nil {
		return nil, true, err
	}
	if !isRange {
		strs = []string{entry}
	}
	addrs = make([]netip.Addr, 0, len(strs))
	for _, s := range strs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, isRange, fmt.Errorf("%q is not an IP address or a range (FIRST-LAST, as 10.0.3.100-149)", entry)
		}
		addrs = append(addrs, a)
	}
	return addrs, isRange, nil
}

// expandRange returns the addresses "FIRST-LAST" stands for, in order,
// or, for a plain address, that address as it is written (ok is false
// when s is no range: the caller checks it as an address).
func expandRange(s string) (addrs []string, ok bool, err error) {
	first, last, found := strings.Cut(s, "-")
	if !found {
		return nil, false, nil
	}
	a, perr := netip.ParseAddr(strings.TrimSpace(first))
	if perr != nil {
		return nil, true, fmt.Errorf("%q: %q is not an IP address (a range is FIRST-LAST, as 10.0.3.100-149)", s, first)
	}
	base, bits := 10, 8
	if a.Is6() {
		base, bits = 16, 16
	}
	end, perr := strconv.ParseUint(strings.TrimSpace(last), base, bits)
	if perr != nil {
		return nil, true, fmt.Errorf("%q: %q is not the last %s of the range's last address", s, last,
			map[bool]string{false: "octet (0-255)", true: "group (hex, 0-ffff)"}[a.Is6()])
	}
	b := a.AsSlice()
	start := uint64(b[len(b)-1])
	if a.Is6() {
		start = uint64(b[len(b)-2])<<8 | start
	}
	if end < start {
		return nil, true, fmt.Errorf("%q: the range ends below its first address", s)
	}
	if end-start+1 > maxRangeAddrs {
		return nil, true, fmt.Errorf("%q: %d addresses; a range has at most %d", s, end-start+1, maxRangeAddrs)
	}
	for v := start; v <= end; v++ {
		b[len(b)-1] = byte(v)
		if a.Is6() {
			b[len(b)-2] = byte(v >> 8)
		}
		ip, _ := netip.AddrFromSlice(b)
		addrs = append(addrs, ip.String())
	}
	return addrs, true, nil
}
