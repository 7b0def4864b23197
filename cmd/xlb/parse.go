// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
)

// parseAddrPort parses what -t, -u and -r take, saying what is wrong:
// the address, or a port that is not a number from 0 to 65535.
func parseAddrPort(what, v string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q: want ADDRESS:PORT ([IPv6]:PORT for IPv6)", what, v)
	}
	a, aerr := netip.ParseAddr(host)
	if aerr != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q: %q is not an IP address", what, v, host)
	}
	if a.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%s %q: an address with a zone (%%%s) is not taken", what, v, a.Zone())
	}
	n, perr := strconv.ParseUint(port, 10, 64)
	if perr != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q: port %q is not a number", what, v, port)
	}
	return netip.AddrPort{}, fmt.Errorf("%s %q: port %d is out of range (0 to 65535)", what, v, n)
}

// strconvFlag matches pflag's message for a number flag it cannot parse.
var strconvFlag = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: strconv\.Parse(Int|Uint|Float): parsing ".*": (invalid syntax|value out of range)$`)

// plainFlagError words pflag's parse errors of number flags without Go's
// strconv text: `-w, --weight: "abc" is not a whole number`.
func plainFlagError(err error) error {
	m := strconvFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	kind := map[string]string{"Int": "a whole number", "Uint": "a whole number from 0", "Float": "a number"}[m[3]]
	if m[4] == "value out of range" {
		return fmt.Errorf("%s: %q is out of range", m[2], m[1])
	}
	return fmt.Errorf("%s: %q is not %s", m[2], m[1], kind)
}
