// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/apply/applytest"
)

// twoVIPs has a VIP and a local IP of each family, the first VIP twice.
const twoVIPs = `interfaces: [eth0]
services:
  - {vip: 192.0.2.10, port: 80, protocol: tcp, local_ips: [198.51.100.254], reals: [{address: 198.51.100.1, port: 80}]}
  - {vip: 192.0.2.10, port: 53, protocol: udp, local_ips: [198.51.100.254], reals: [{address: 198.51.100.1, port: 53}]}
  - {vip: 2001:db8::10, port: 443, protocol: tcp, local_ips: ["2001:db8:1::fe"], reals: [{address: "2001:db8:1::1", port: 443}]}
`

func TestHostAddrs(t *testing.T) {
	got := hostAddrs(applytest.Desired(t, twoVIPs))
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.254"),
		netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:1::fe")}
	if !slices.Equal(got, want) {
		t.Fatalf("hostAddrs = %v, want %v (every VIP and local IP once, in file order)", got, want)
	}
	if hostAddrs(nil) != nil {
		t.Fatal("no configuration, no addresses")
	}
}
