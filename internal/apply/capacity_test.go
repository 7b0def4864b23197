// SPDX-License-Identifier: Apache-2.0

package apply_test

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/apply/applytest"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// addrN returns the n-th address of a /16 block of TEST-NET style
// space: 10.b.x.y.
func addrN(b byte, n int) string {
	return netip.AddrFrom4([4]byte{10, b, byte(n >> 8), byte(n)}).String()
}

// spread returns a configuration of services tcp 10.1.x.y:80 (one VIP
// each unless sharedVIP: then 10.1.0.0 on ports from 80), with reals
// 10.2.x.y spread evenly over them and local IPs 10.3.x.y, a service's
// full set of them (MaxServiceLocalIPs) before the next.
func spread(services, reals, laddrs int, sharedVIP bool) *config.Config {
	cfg := &config.Config{Interfaces: []string{"eth0"}}
	r, l := 0, 0
	for i := range services {
		s := config.Service{VIP: addrN(1, i), Port: 80, Protocol: "tcp"}
		if sharedVIP {
			s.VIP, s.Port = addrN(1, 0), 80+i
		}
		for ; r < reals*(i+1)/services; r++ {
			s.Reals = append(s.Reals, config.Real{Address: addrN(2, r), Port: 80})
		}
		for ; l < laddrs && len(s.LocalIPs) < loadbalancer.MaxServiceLocalIPs; l++ {
			s.LocalIPs = append(s.LocalIPs, addrN(3, l))
		}
		cfg.Services = append(cfg.Services, s)
	}
	return cfg
}

// capacityCase is a configuration one over a capacity: applied after
// first (when set), it must be refused with the problem want.
type capacityCase struct {
	name  string
	first *config.Config
	have  *config.Config
	want  string
}

// capacityCases are configurations one over each capacity of lim.
func capacityCases(lim loadbalancer.Limits) []capacityCase {
	svcLaddrs := loadbalancer.MaxServiceLocalIPs
	return []capacityCase{
		{"services", nil, spread(lim.Services+1, 0, 0, true),
			fmt.Sprintf("services: %d services; the data path holds at most %d", lim.Services+1, lim.Services)},
		// (VIPs: the data path holds one per service, so the services'
		// limit is always crossed first)
		{"reals", nil, spread(2, lim.Reals+1, 0, false),
			fmt.Sprintf("services[1].reals[%d]: one real too many: the configuration has %d reals", lim.Reals-lim.Reals/2, lim.Reals+1)},
		{"local IPs", nil, spread(lim.LocalIPs/svcLaddrs+1, 0, lim.LocalIPs+1, false),
			fmt.Sprintf("services[%d].local_ips[%d]: %s is one local IP too many", lim.LocalIPs/svcLaddrs, 0, addrN(3, lim.LocalIPs))},
		// local IPs keep their ids: every one used before counts
		{"local IPs over the data path's life", spread(lim.LocalIPs/svcLaddrs, 0, lim.LocalIPs, false),
			&config.Config{Interfaces: []string{"eth0"}, Services: []config.Service{
				{VIP: addrN(1, 0), Port: 80, Protocol: "tcp", LocalIPs: []string{addrN(4, 0)}}}},
			fmt.Sprintf("services[0].local_ips[0]: %s is one local IP too many: the data path holds at most %d (max_local_ips) and keeps %d already",
				addrN(4, 0), lim.LocalIPs, lim.LocalIPs)},
		{"a weighted round robin table", nil, &config.Config{Interfaces: []string{"eth0"}, Services: []config.Service{
			{VIP: addrN(1, 0), Port: 80, Protocol: "tcp", Scheduler: "wrr", Reals: weighted(65535, 17)}}},
			"services[0].reals: the weights make a wrr table of 1114096 slots"},
	}
}

// checkRefused applies tc to the daemon: it must be refused as a
// capacity validation error, the data path holding what it held, its
// local IPs included.
func checkRefused(t *testing.T, d *daemon, tc capacityCase) {
	t.Helper()
	if tc.first != nil {
		if err := d.applyConfig(tc.first); err != nil {
			t.Fatalf("the configuration before: %v", err)
		}
	}
	held, laddrs := d.cur, d.dp.HeldLocalIPs()
	err := d.applyConfig(tc.have)
	var ve *config.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, config.ErrCapacity) {
		t.Fatalf("got %v, want a capacity validation error", err)
	}
	if !strings.Contains(err.Error(), tc.want) {
		t.Errorf("error:\n%v\nwant a problem with %q", err, tc.want)
	}
	assertHolds(t, d.dp, held, "after the refusal")
	if now := d.dp.HeldLocalIPs(); !slices.Equal(now, laddrs) {
		t.Errorf("the data path holds local IPs %v, before %v", now, laddrs)
	}
}

// TestCapacityRefusedBeforeAnyChange applies configurations one over
// each capacity of the compiled data path: each must be refused as a
// validation error naming the field where the limit is crossed, before
// any change is asked of the data path.
func TestCapacityRefusedBeforeAnyChange(t *testing.T) {
	lim, err := datapath.SpecLimits()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range capacityCases(lim) {
		t.Run(tc.name, func(t *testing.T) {
			dp := &applytest.DataPath{}
			d := emptyDaemon(dp)
			calls := 0
			if tc.first != nil {
				if err := d.applyConfig(tc.first); err != nil {
					t.Fatalf("the configuration before: %v", err)
				}
				calls, tc.first = dp.Calls, nil
			}
			checkRefused(t, d, tc)
			if dp.Calls != calls {
				t.Errorf("%d changes were asked of the data path", dp.Calls-calls)
			}
		})
	}
}

// weighted returns n reals of weight w and one of weight 1.
func weighted(w, n int) []config.Real {
	out := make([]config.Real, 0, n+1)
	for i := range n + 1 {
		weight := w
		if i == n {
			weight = 1
		}
		out = append(out, config.Real{Address: addrN(2, i), Port: 80, Weight: &weight})
	}
	return out
}

// realsYAML writes n reals 10.b.0.i:80 in flow style.
func realsYAML(b byte, from, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("{address: %s, port: 80}", addrN(b, from+i))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestRealIDsOnTheWay: a service's new reals take their ids before the
// reals they replace give theirs back. With ten real ids, replacing the
// eight reals of a service cannot be done in one apply and is refused
// before any change; moving two reals from one service to another can,
// when the one that shrinks goes first.
func TestRealIDsOnTheWay(t *testing.T) {
	small := loadbalancer.Limits{Services: 10, VIPs: 10, Reals: 10, LocalIPs: 10}
	two := func(a, b string) string {
		return "interfaces: [eth0]\nservices:\n" +
			"  - {vip: 192.0.2.10, port: 80, protocol: tcp, reals: " + a + "}\n" +
			"  - {vip: 192.0.2.10, port: 81, protocol: tcp, reals: " + b + "}\n"
	}
	for _, tc := range []struct {
		name         string
		first, apply string
		want         string // "": applied
	}{
		{"replace eight of ten", two(realsYAML(5, 0, 8), "[]"), two(realsYAML(6, 0, 8), "[]"),
			"services[0].reals: its 8 new reals need an id each before the 8 they replace free theirs, and only 2 of the data path's 10"},
		{"move two", two(realsYAML(5, 0, 4), realsYAML(6, 0, 6)), two(realsYAML(5, 0, 6), realsYAML(6, 0, 4)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := &applytest.DataPath{Capacity: small}
			d := emptyDaemon(dp)
			if err := d.apply(t, tc.first); err != nil {
				t.Fatal(err)
			}
			dp.ResetCalls()
			err := d.apply(t, tc.apply)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				assertHolds(t, d.dp, applytest.Desired(t, tc.apply), "after the apply")
				return
			}
			if !errors.Is(err, config.ErrCapacity) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a capacity error with %q", err, tc.want)
			}
			if dp.Calls != 0 {
				t.Errorf("%d changes were asked of the data path", dp.Calls)
			}
			assertHolds(t, d.dp, applytest.Desired(t, tc.first), "after the refusal")
		})
	}
}

// TestCheckAsksTheHost: Check passes the host's addresses to the
// validation, so a VIP the host owns is refused without host_address.
func TestCheckAsksTheHost(t *testing.T) {
	cfg, err := config.Parse([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	owns := func(a netip.Addr) bool { return a == netip.MustParseAddr("192.0.2.10") }
	if _, err := apply.Check(&applytest.DataPath{}, cfg, owns); !errors.Is(err, config.ErrHostAddress) {
		t.Fatalf("got %v, want the VIP refused as the host's", err)
	}
	if _, err := apply.Check(&applytest.DataPath{}, cfg, nil); err != nil {
		t.Fatalf("without the host's addresses: %v", err)
	}
}
