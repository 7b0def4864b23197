// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string
		want    string // addresses, space-separated
		wantErr string
	}{
		{name: "one", have: "192.0.2.1", want: "192.0.2.1"},
		{name: "last byte", have: "192.0.2.1-3", want: "192.0.2.1 192.0.2.2 192.0.2.3"},
		{name: "two addresses", have: "192.0.2.255-192.0.3.0", want: "192.0.2.255 192.0.3.0"},
		{name: "prefix", have: "192.0.2.9/30", want: "192.0.2.8 192.0.2.9 192.0.2.10 192.0.2.11"},
		{name: "IPv6 last group, in hex", have: "2001:db8::a-c", want: "2001:db8::a 2001:db8::b 2001:db8::c"},
		{name: "backwards", have: "192.0.2.5-1", wantErr: "not an IP address range"},
		{name: "families", have: "192.0.2.5-2001:db8::1", wantErr: "not an IP address range"},
		{name: "too many", have: "10.0.0.0/23", wantErr: "more than 256"},
		{name: "too many in a range", have: "10.0.0.0-10.0.1.255", wantErr: "more than 256"},
		{name: "a name", have: "www.example.com", wantErr: "not an IP address or range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs, err := parseRange(tc.have)
			if !checkErr(t, err, tc.wantErr) {
				return
			}
			if got := strings.Trim(fmt.Sprint(addrs), "[]"); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecodeHex(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    []string
		want    string
		wantErr bool
	}{
		{name: "pairs", have: []string{"70696e67"}, want: "ping"},
		{name: "words", have: []string{"70", "69", "6E", "67"}, want: "ping"},
		{name: "odd digits, as the keepalived manual reads them", have: []string{"Ab12f", "3", "456"}, want: "\xab\x12\x0f\x03\x45\x06"},
		{name: "not hex", have: []string{"7g"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeHex(tc.have)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTemplateCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		addr string
		port int
		want string
	}{
		{name: "address and port words", have: "/bin/chk 10.0.0.1 80", addr: "10.0.0.1", port: 80,
			want: "/bin/chk ${XLB_REAL_ADDR} ${XLB_REAL_PORT}"},
		{name: "address:port", have: "/bin/chk http://10.0.0.1:80/x", addr: "10.0.0.1", port: 80,
			want: "/bin/chk http://${XLB_REAL_ADDR}:${XLB_REAL_PORT}/x"},
		{name: "a longer address is not the real's", have: "/bin/chk 10.0.0.10 10.0.0.1", addr: "10.0.0.1", port: 80,
			want: "/bin/chk 10.0.0.10 ${XLB_REAL_ADDR}"},
		{name: "no address, no port rewrite", have: "/bin/chk 80", addr: "10.0.0.1", port: 80, want: "/bin/chk 80"},
		{name: "not inside single quotes", have: "sh -c 'curl 10.0.0.1' 10.0.0.1", addr: "10.0.0.1", port: 80,
			want: "sh -c 'curl 10.0.0.1' ${XLB_REAL_ADDR}"},
		{name: "a port inside a word stays", have: "/bin/chk 10.0.0.1 -t 8080", addr: "10.0.0.1", port: 80,
			want: "/bin/chk ${XLB_REAL_ADDR} -t 8080"},
		{name: "IPv6", have: "/bin/chk [2001:db8::1]:443 2001:db8::10", addr: "2001:db8::1", port: 443,
			want: "/bin/chk [${XLB_REAL_ADDR}]:${XLB_REAL_PORT} 2001:db8::10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := templateCommand(tc.have, netip.MustParseAddr(tc.addr), tc.port); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidMask(t *testing.T) {
	for _, tc := range []struct {
		have string
		want bool
	}{
		{"255.255.255.0", true}, {"255.255.255.255", true}, {"0.0.0.0", true}, {"24", true}, {"128", true},
		{"255.0.255.0", false}, {"129", false}, {"ffff::", false}, {"mask", false},
	} {
		t.Run(tc.have, func(t *testing.T) {
			if got := validMask(tc.have); got != tc.want {
				t.Errorf("validMask(%q) = %v, want %v", tc.have, got, tc.want)
			}
		})
	}
}
