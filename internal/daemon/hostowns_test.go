// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestHostOwns: the host owns the addresses of its interfaces, except
// those the daemon added.
func TestHostOwns(t *testing.T) {
	have, err := interfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var a netip.Addr
	for a = range have {
		break
	}
	if !a.IsValid() {
		testenv.Unavailable(t, "this host has no address")
	}
	d := &Daemon{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	owns := d.hostOwns()
	if !owns(a) {
		t.Errorf("%s, an address of an interface, is not the host's", a)
	}
	if other := netip.MustParseAddr("192.0.2.254"); !have[other] && owns(other) {
		t.Errorf("%s, on no interface, is the host's", other)
	}
	// an address in the record (this run's or, after a crash, an
	// earlier run's) is the daemon's
	rec, _ := hoststate.Open("")
	if err := rec.Add(hoststate.Entry{Kind: hoststate.Address, Dev: "lo", Addr: a}); err != nil {
		t.Fatal(err)
	}
	d.addrs.record = rec
	if d.hostOwns()(a) {
		t.Errorf("%s, which the daemon added, is the host's", a)
	}
}
