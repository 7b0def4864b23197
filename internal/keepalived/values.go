// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// maxRange is the most addresses one range of a group expands to.
const maxRange = 256

// parseRange reads an address or a keepalived address range:
// 192.0.2.1-10 (the last byte; the last 16-bit group for IPv6),
// 192.0.2.250-192.0.3.10, or a prefix such as 192.0.2.8/29.
func parseRange(s string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return []netip.Addr{a}, nil
	}
	var lo, hi netip.Addr
	if p, err := netip.ParsePrefix(s); err == nil {
		p = p.Masked()
		if p.Addr().BitLen()-p.Bits() > 8 {
			return nil, fmt.Errorf("%s has more than %d addresses", s, maxRange)
		}
		lo = p.Addr()
		for hi = lo; p.Contains(hi.Next()); hi = hi.Next() {
		}
		return span(s, lo, hi)
	}
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return nil, fmt.Errorf("%q is not an IP address or range", s)
	}
	lo, err := netip.ParseAddr(s[:i])
	if err != nil {
		return nil, fmt.Errorf("%q is not an IP address or range", s)
	}
	if hi, err = netip.ParseAddr(s[i+1:]); err != nil {
		hi, err = lastPart(lo, s[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address range", s)
		}
	}
	return span(s, lo, hi)
}

// lastPart returns lo with its last byte (IPv4) or 16-bit group (IPv6)
// replaced by end.
func lastPart(lo netip.Addr, end string) (netip.Addr, error) {
	if lo.Is4() {
		v, err := strconv.ParseUint(end, 10, 8)
		if err != nil {
			return netip.Addr{}, err
		}
		b := lo.As4()
		b[3] = byte(v)
		return netip.AddrFrom4(b), nil
	}
	v, err := strconv.ParseUint(end, 16, 16)
	if err != nil {
		return netip.Addr{}, err
	}
	b := lo.As16()
	b[14], b[15] = byte(v>>8), byte(v)
	return netip.AddrFrom16(b).WithZone(lo.Zone()), nil
}

// span lists the addresses from lo to hi.
func span(s string, lo, hi netip.Addr) ([]netip.Addr, error) {
	if lo.Is4() != hi.Is4() || hi.Less(lo) {
		return nil, fmt.Errorf("%q is not an IP address range", s)
	}
	var out []netip.Addr
	for a := lo; ; a = a.Next() {
		if len(out) == maxRange {
			return nil, fmt.Errorf("%s has more than %d addresses", s, maxRange)
		}
		out = append(out, a)
		if a == hi {
			return out, nil
		}
	}
}

// family names an address family as xlb's messages do.
func family(is4 bool) string {
	if is4 {
		return "IPv4"
	}
	return "IPv6"
}

// decodeHex reads keepalived's free-form hex strings (UDP_CHECK payload
// and require_reply): each word is read in pairs of digits, a last odd
// digit being a byte of its own, so "Ab12f 3" is AB 12 0F 03.
func decodeHex(words []string) ([]byte, error) {
	var out []byte
	for _, w := range words {
		if len(w)%2 == 1 {
			w = w[:len(w)-1] + "0" + w[len(w)-1:]
		}
		b, err := hex.DecodeString(w)
		if err != nil {
			return nil, fmt.Errorf("%q is not hexadecimal", w)
		}
		out = append(out, b...)
	}
	return out, nil
}

// templateCommand rewrites a check command written for one real so that
// it serves every real: the real's address becomes ${XLB_REAL_ADDR} and
// its port, as a word of its own or after the address and a colon,
// ${XLB_REAL_PORT}. Nothing inside single quotes is rewritten (the shell
// would not expand it there). The port is rewritten only where the
// address was.
func templateCommand(cmd string, addr netip.Addr, port int) string {
	a := addr.String()
	out, found := replaceToken(cmd, a, "${XLB_REAL_ADDR}", func(b byte) bool {
		if addr.Is4() {
			return (b >= '0' && b <= '9') || b == '.'
		}
		return isHex(b) || b == '.' || b == ':'
	})
	if !found || port == 0 {
		return out
	}
	p := strconv.Itoa(port)
	out = strings.ReplaceAll(out, "${XLB_REAL_ADDR}:"+p, "${XLB_REAL_ADDR}:${XLB_REAL_PORT}")
	out = strings.ReplaceAll(out, "${XLB_REAL_ADDR}]:"+p, "${XLB_REAL_ADDR}]:${XLB_REAL_PORT}")
	out, _ = replaceToken(out, p, "${XLB_REAL_PORT}", func(b byte) bool { return b != ' ' && b != '\t' })
	return out
}

// replaceToken replaces each occurrence of old in s that is outside
// single quotes and not touching a byte for which inWord is true.
func replaceToken(s, old, repl string, inWord func(byte) bool) (string, bool) {
	var b strings.Builder
	found := false
	quoted := false
	for i := 0; i < len(s); {
		if s[i] == '\'' {
			quoted = !quoted
		}
		if !quoted && strings.HasPrefix(s[i:], old) &&
			(i == 0 || !inWord(s[i-1])) && (i+len(old) == len(s) || !inWord(s[i+len(old)])) {
			b.WriteString(repl)
			i += len(old)
			found = true
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String(), found
}

// isHex tells whether b is a hexadecimal digit.
func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

// joinCommand makes one shell command of misc_path's words.
func joinCommand(words []string) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w
		if len(words) > 1 && (w == "" || strings.ContainsAny(w, " \t'\"")) {
			parts[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(parts, " ")
}

// durationArg reads keepalived's timer: seconds, possibly fractional.
func durationArg(args []string) (config.Duration, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("want a number of seconds")
	}
	d, err := config.ParseDuration(args[0])
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a number of seconds above 0", args[0])
	}
	return d, nil
}

// isFalse tells whether s is one of keepalived's false booleans.
func isFalse(s string) bool {
	switch strings.ToLower(s) {
	case "off", "false", "no", "0":
		return true
	}
	return false
}
