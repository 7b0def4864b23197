// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/hoststate"
)

// fakeHost is ip(8) on a host held in memory, which fails the commands a
// test names.
type fakeHost struct {
	addrs map[string]bool // "ADDR/LEN dev DEV"
	fail  map[string]bool // "add|del ADDR/LEN dev DEV" that fail
	cmds  []string
}

func newFakeHost(own ...string) *fakeHost {
	h := &fakeHost{addrs: map[string]bool{}, fail: map[string]bool{}}
	for _, a := range own {
		h.addrs[a] = true
	}
	return h
}

func (h *fakeHost) ip(args ...string) ([]byte, error) {
	// addr add|del PREFIX dev DEV [nodad]
	verb, what := args[1], args[2]+" dev "+args[4]
	h.cmds = append(h.cmds, verb+" "+what)
	if h.fail[verb+" "+what] {
		return []byte("RTNETLINK answers: Operation not permitted"), errors.New("exit status 2")
	}
	switch {
	case verb == "add" && h.addrs[what]:
		return []byte("Error: ipv4: Address already assigned."), errors.New("exit status 2")
	case verb == "add":
		h.addrs[what] = true
	case verb == "del" && !h.addrs[what]:
		return []byte("Error: ipv4: Address not found."), errors.New("exit status 2")
	default:
		delete(h.addrs, what)
	}
	return nil, nil
}

func (h *fakeHost) has() []string {
	var out []string
	for a := range h.addrs {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func recordedAddrs(r *hoststate.Record) []string {
	var out []string
	for _, e := range r.List(hoststate.Address) {
		out = append(out, prefixOf(e.Addr)+" dev "+e.Dev)
	}
	slices.Sort(out)
	return out
}

var (
	vip4 = netip.MustParseAddr("10.0.0.1")
	lip4 = netip.MustParseAddr("10.0.0.2")
	vip6 = netip.MustParseAddr("fd00::1")
)

// TestHostAddrsAllOrNothing injects a failure at each step and checks the
// host and the record agree afterwards, and that an add is all or nothing.
func TestHostAddrsAllOrNothing(t *testing.T) {
	for _, c := range []struct {
		name     string
		own      []string // the host's own addresses before
		recorded []string // what an earlier run recorded (and added)
		fail     string
		want     []netip.Addr
		wantErr  string
		host     []string // the host's addresses after
		record   []string // the record after
	}{
		{
			name: "IPv6 on the second interface fails: the first is removed again",
			fail: "add fd00::1/128 dev eth1", want: []netip.Addr{vip4, vip6},
			wantErr: "fd00::1 on eth1",
			host:    nil, record: nil,
		},
		{
			name: "the host's own address is used, not recorded, not removed",
			own:  []string{"10.0.0.1/32 dev lo"}, want: []netip.Addr{vip4, lip4},
			host:   []string{"10.0.0.1/32 dev lo", "10.0.0.2/32 dev lo"},
			record: []string{"10.0.0.2/32 dev lo"},
		},
		{
			name:     "an earlier run's addresses are taken over, the unwanted removed",
			recorded: []string{"10.0.0.1/32 dev lo", "10.0.0.2/32 dev lo"}, want: []netip.Addr{vip4},
			host:   []string{"10.0.0.1/32 dev lo"},
			record: []string{"10.0.0.1/32 dev lo"},
		},
		{
			name:     "a removal that fails stays recorded",
			recorded: []string{"10.0.0.2/32 dev lo"}, fail: "del 10.0.0.2/32 dev lo", want: nil,
			wantErr: "remove host address 10.0.0.2",
			host:    []string{"10.0.0.2/32 dev lo"},
			record:  []string{"10.0.0.2/32 dev lo"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := newFakeHost(append(c.own, c.recorded...)...)
			if c.fail != "" {
				host.fail[c.fail] = true
			}
			rec, _ := hoststate.Open("")
			for _, r := range c.recorded {
				p, dev, _ := strings.Cut(r, " dev ")
				if err := rec.Add(hoststate.Entry{Kind: hoststate.Address, Dev: dev, Addr: netip.MustParsePrefix(p).Addr()}); err != nil {
					t.Fatal(err)
				}
			}
			set := hostAddrSet{ifaces: []string{"eth0", "eth1"}, record: rec, ip: host.ip}
			err := set.sync(c.want)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("sync: %v, want an error containing %q", err, c.wantErr)
			}
			if got := host.has(); !slices.Equal(got, c.host) {
				t.Errorf("host addresses: %v, want %v (commands %v)", got, c.host, host.cmds)
			}
			if got := recordedAddrs(rec); !slices.Equal(got, c.record) {
				t.Errorf("recorded: %v, want %v", got, c.record)
			}
			for _, cmd := range host.cmds {
				if strings.HasPrefix(cmd, "add ") && slices.Contains(c.recorded, strings.TrimPrefix(cmd, "add ")) {
					t.Errorf("re-added %q, which the earlier run's record says is there", cmd)
				}
			}
		})
	}
}
