// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Checks of the operations keys of a service: persistence and health
// checks.

// persistence checks persistent and netmask and sets them on svc.
func (ch *checker) persistence(path string, s *Service, vip netip.Addr, svc *loadbalancer.Service) {
	switch {
	case s.Persistent < 0 || s.Persistent > MaxTimeout:
		ch.kindf(ErrOutOfRange, path+".persistent", "%d seconds: want 0 (off) to %d", s.Persistent, MaxTimeout)
	case s.Persistent == 0 && s.Netmask != "":
		ch.addf(path+".netmask", "only means something with persistent: SECONDS")
	default:
		svc.Persistent = uint32(s.Persistent)
	}
	if s.Netmask == "" || !vip.IsValid() {
		return
	}
	bits, err := ParseNetmask(s.Netmask, vip.Is4())
	if err != nil {
		ch.addf(path+".netmask", "%v", err)
		return
	}
	if bits < vip.BitLen() {
		svc.PersistPrefix = uint8(bits)
	}
}

// clientAddress checks client_address and syn_proxy and sets them on svc.
func (ch *checker) clientAddress(path string, s *Service, proto loadbalancer.Proto, protoOK bool, svc *loadbalancer.Service) {
	ca, err := loadbalancer.ParseClientAddress(s.ClientAddress)
	switch {
	case err != nil:
		ch.addf(path+".client_address", "%q: want none, toa or proxy-v2", s.ClientAddress)
	case ca != loadbalancer.ClientAddressNone && protoOK && proto != loadbalancer.TCP:
		ch.addf(path+".client_address", "%s is for TCP services; this one is %s", ca, proto)
	default:
		svc.ClientAddress = ca
	}
	switch {
	case !s.SynProxy:
	case protoOK && proto != loadbalancer.TCP:
		ch.addf(path+".syn_proxy", "is for TCP services; this one is %s", proto)
	case svc.ClientAddress != loadbalancer.ClientAddressNone:
		ch.addf(path+".syn_proxy", "not supported together with client_address %s yet", svc.ClientAddress)
	default:
		svc.SynProxy = true
	}
}

// ParseNetmask reads a persistence netmask: a dotted IPv4 mask
// ("255.255.255.0", IPv4 services only) or a prefix length ("24", "/64")
// and returns the prefix length.
func ParseNetmask(s string, v4 bool) (int, error) {
	max := 128
	if v4 {
		max = 32
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if !v4 || !a.Is4() {
			return 0, fmt.Errorf("%q: a dotted mask is for IPv4 services; write a prefix length (0 to %d)", s, max)
		}
		m := a.As4()
		n := uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
		bits := 0
		for n&(1<<31) != 0 {
			bits++
			n <<= 1
		}
		if n != 0 {
			return 0, fmt.Errorf("%q is not a netmask (its ones must come first)", s)
		}
		return bits, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "/"))
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("%q: want a prefix length 0 to %d or a dotted IPv4 mask", s, max)
	}
	return n, nil
}

// FormatNetmask writes a persistence prefix as ipvsadm shows it: a
// dotted mask for IPv4, the prefix length for IPv6; "" when the prefix
// is the whole address (0 means that too).
func FormatNetmask(vip netip.Addr, bits int) string {
	if bits <= 0 || bits >= vip.BitLen() {
		return ""
	}
	if vip.Is4() {
		m := ^uint32(0) << (32 - bits)
		return netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String()
	}
	return strconv.Itoa(bits)
}

// Bounds of health check intervals and timeouts.
const (
	minCheckInterval = 10 * time.Millisecond
	maxCheckInterval = time.Hour
	minCheckTimeout  = time.Millisecond
)

// healthCheck checks a service's health_check and returns it with its
// defaults, or nil when the service has none.
func (ch *checker) healthCheck(path string, h *HealthCheck) *HealthCheck {
	if h == nil {
		return nil
	}
	path += ".health_check"
	n := len(ch.problems)
	c := h.WithDefaults()
	if !slices.Contains(HealthCheckTypes, c.Type) {
		ch.addf(path+".type", "%q: want one of %s", c.Type, strings.Join(HealthCheckTypes, ", "))
	}
	if c.Interval < Duration(minCheckInterval) || c.Interval > Duration(maxCheckInterval) {
		ch.kindf(ErrOutOfRange, path+".interval", "%s: want %s to %s", c.Interval, minCheckInterval, maxCheckInterval)
	}
	if c.Timeout < Duration(minCheckTimeout) || c.Timeout > c.Interval {
		ch.kindf(ErrOutOfRange, path+".timeout", "%s: want %s to the interval (%s)", c.Timeout, minCheckTimeout, c.Interval)
	}
	if c.Rise < 1 || c.Rise > 100 {
		ch.kindf(ErrOutOfRange, path+".rise", "%d: want 1 to 100", c.Rise)
	}
	if c.Fall < 1 || c.Fall > 100 {
		ch.kindf(ErrOutOfRange, path+".fall", "%d: want 1 to 100", c.Fall)
	}
	ch.port(path+".port", c.Port, "0 = the real's port")
	if c.OnFail != "keep" && c.OnFail != "reset" {
		ch.addf(path+".on_fail", "%q: want keep or reset", c.OnFail)
	}
	web := c.Type == "http" || c.Type == "https"
	only := func(key string, set bool, types string) {
		if set {
			ch.addf(path+"."+key, "only %s checks use it (this one is %s)", types, c.Type)
		}
	}
	if !web {
		only("path", h.Path != "", "http and https")
		only("host", h.Host != "", "http and https")
		only("expect_status", h.ExpectStatus != 0, "http and https")
		only("expect_body", h.ExpectBody != "", "http and https")
	} else {
		if !strings.HasPrefix(c.Path, "/") {
			ch.addf(path+".path", "%q: want an absolute path (/...)", c.Path)
		}
		if c.ExpectStatus < 100 || c.ExpectStatus > 599 {
			ch.kindf(ErrOutOfRange, path+".expect_status", "%d: want an HTTP status, 100 to 599", c.ExpectStatus)
		}
	}
	if c.Type != "udp" {
		only("send", h.Send != "", "udp")
		only("expect", h.Expect != "", "udp")
	}
	if c.Type == "exec" {
		ch.execCheck(path, &c)
	} else {
		only("command", h.Command != "", "exec")
		only("shell", h.Shell, "exec")
		only("user", h.User != "", "exec")
		only("group", h.Group != "", "exec")
	}
	if len(ch.problems) > n {
		return nil
	}
	return &c
}

// SameAddr says whether two address strings of a configuration name the
// same IP ("2001:db8::1" and "2001:DB8:0::1" do); strings that are not
// addresses are compared as they are.
func SameAddr(a, b string) bool {
	x, errx := netip.ParseAddr(a)
	y, erry := netip.ParseAddr(b)
	if errx != nil || erry != nil {
		return a == b
	}
	return x == y
}
