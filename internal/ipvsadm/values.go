// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// The parsers of option values: numbers, schedulers, addresses and
// netmasks, as ipvsadm reads them (numeric only: no name is looked up).

// number parses a decimal integer in [min, max].
func number(s string, min, max int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, min, max)
	}
	return n, nil
}

// checkScheduler accepts the schedulers xlb has.
func checkScheduler(s string) error {
	for _, k := range Schedulers {
		if s == k {
			return nil
		}
	}
	for _, k := range ipvsSchedulers {
		if s == k {
			return fmt.Errorf("xlb has no %s scheduler (it has %s)", s, strings.Join(Schedulers, ", "))
		}
	}
	return fmt.Errorf("unknown scheduler (want one of %s)", strings.Join(Schedulers, ", "))
}

// parseAddr parses an IP address, bare or, for IPv6, in brackets. Host
// names are not looked up.
func parseAddr(s string) (netip.Addr, error) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, errors.New("want an IP address (host names are not looked up)")
	case a.Zone() != "":
		return netip.Addr{}, errors.New("zones are not supported")
	}
	return a, nil
}

// parseHostPort parses ipvsadm's host[:port]: IPv4[:PORT], bare IPv6 or
// [IPv6]:PORT. It reports whether a port was given.
func parseHostPort(s string) (netip.Addr, uint16, bool, error) {
	host, port, hasPort := s, "", false
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || !strings.HasPrefix(s[end+1:], ":") {
			return netip.Addr{}, 0, false, errors.New("want [IPv6]:PORT")
		}
		host, port, hasPort = s[1:end], s[end+2:], true
	} else if a, err := netip.ParseAddr(s); err != nil || !a.Is6() {
		if i := strings.LastIndex(s, ":"); i >= 0 {
			host, port, hasPort = s[:i], s[i+1:], true
		}
	}
	a, err := parseAddr(host)
	if err != nil {
		return netip.Addr{}, 0, false, err
	}
	if !hasPort {
		return a, 0, false, nil
	}
	n, err := number(port, 0, 65535)
	if err != nil {
		return netip.Addr{}, 0, false, fmt.Errorf("port %q: want a number from 0 to 65535 (service names are not looked up)", port)
	}
	return a, uint16(n), true, nil
}

// parseService parses -t/-u's value; a missing port is port 0. It
// reports whether the port was given.
func parseService(s string) (netip.AddrPort, bool, error) {
	a, port, hasPort, err := parseHostPort(s)
	if err != nil {
		return netip.AddrPort{}, false, err
	}
	return netip.AddrPortFrom(a, port), hasPort, nil
}

// parseReal parses -r's value; a missing port is the service's, as in
// ipvsadm. The real must be of the service's family.
func parseReal(s string, svc netip.AddrPort) (netip.AddrPort, error) {
	a, port, hasPort, err := parseHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("illegal real server address[:port]: %w", err)
	}
	if !hasPort {
		port = svc.Port()
	}
	if svc.IsValid() && a.Is4() != svc.Addr().Is4() {
		return netip.AddrPort{}, fmt.Errorf("the real server and the virtual service %s are of different address families", svc)
	}
	return netip.AddrPortFrom(a, port), nil
}

// parseNetmask parses -M: a dotted mask for an IPv4 service, a prefix
// length 1 to 128 for an IPv6 one. The whole address (/32, /128) is the
// default and returns "".
func parseNetmask(s string, v6 bool) (string, error) {
	if v6 {
		n, err := number(s, 1, 128)
		if err != nil {
			return "", errors.New("illegal ipv6 netmask: want a prefix length from 1 to 128")
		}
		if n == 128 {
			return "", nil
		}
		return strconv.Itoa(n), nil
	}
	bits, err := config.ParseNetmask(s, true)
	if err != nil || !strings.Contains(s, ".") {
		return "", errors.New("illegal virtual server persistent mask: want a netmask like 255.255.255.0")
	}
	return config.FormatNetmask(netip.IPv4Unspecified(), bits), nil
}
