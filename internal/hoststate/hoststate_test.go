// SPDX-License-Identifier: Apache-2.0

package hoststate

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

var (
	vip  = Entry{Kind: Address, Dev: "lo", Addr: netip.MustParseAddr("10.0.0.1")}
	vip6 = Entry{Kind: Address, Dev: "eth0.100", Addr: netip.MustParseAddr("fd00::1")}
	hop  = Entry{Kind: Neighbour, Dev: "eth1", Addr: netip.MustParseAddr("192.0.2.9")}
)

// TestRecordOutlivesTheProcess: what one Record adds, the next Open of the
// same pin directory lists (as a daemon after a crash does); removals
// stick too; a memory-only record starts empty.
func TestRecordOutlivesTheProcess(t *testing.T) {
	testenv.RequireRoot(t, "pins a BPF map")
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("xlbt-hs-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		testenv.Unavailable(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{vip, vip6, hop} {
		if err := r.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()

	r, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.List(Address); !slices.Equal(got, []Entry{vip, vip6}) {
		t.Errorf("addresses after reopening: %v, want %v", got, []Entry{vip, vip6})
	}
	if got := r.List(Neighbour); !slices.Equal(got, []Entry{hop}) {
		t.Errorf("neighbours after reopening: %v, want %v", got, []Entry{hop})
	}
	if err := r.Remove(vip); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.List(Address); !slices.Equal(got, []Entry{vip6}) {
		t.Errorf("addresses after a removal and reopening: %v, want %v", got, []Entry{vip6})
	}
	r.Close()

	mem, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if got := mem.List(Address); len(got) != 0 {
		t.Errorf("a memory-only record starts with %v", got)
	}
}

func TestRecordRefusesBadEntries(t *testing.T) {
	r, _ := Open("")
	for _, e := range []Entry{
		{Kind: Address, Dev: "", Addr: vip.Addr},
		{Kind: Address, Dev: "a-name-longer-than-15", Addr: vip.Addr},
		{Kind: Address, Dev: "lo"},
	} {
		if err := r.Add(e); err == nil {
			t.Errorf("Add(%+v) succeeded", e)
		}
	}
	if got := r.List(Address); len(got) != 0 {
		t.Errorf("refused entries were recorded: %v", got)
	}
}
