// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// pinDir makes a bpffs directory for one test and removes it (and with
// it any link pinned there) when the test ends.
func pinDir(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("xlbt-%d-%s", os.Getpid(), filepath.Base(t.Name())))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		testenv.Unavailable(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// pinOneConnection loads a data path with opts (pinned), adds an IPv4
// service and passes one SYN through it, then releases the data path:
// the pins hold the service and one connection. It returns the service.
func pinOneConnection(t *testing.T, opts Options) loadbalancer.ServiceKey {
	t.Helper()
	e := newEnv(t, opts)
	f := families[0]
	key := loadbalancer.ServiceKey{VIP: f.vip, Port: 80, Proto: loadbalancer.TCP}
	e.addService(key, loadbalancer.RoundRobin, f.laddr, reals(f, 1)...)
	e.expect(e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S").frame(t), XDPRedirect, nil)
	if err := e.dp.Close(); err != nil {
		t.Fatal(err)
	}
	return key
}

// attachedLink returns the link pinned for ifname in mode and its info.
func attachedLink(t *testing.T, dir, ifname string, mode loadbalancer.AttachMode) *link.Info {
	t.Helper()
	l, err := link.LoadPinnedLink(linkPin(dir, ifname, mode), nil)
	if err != nil {
		t.Fatalf("pinned link of %s: %v", ifname, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func programID(t *testing.T, p *ebpf.Program) ebpf.ProgramID {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// TestPinnedLinkOutlivesTheProcess: Close leaves the program attached
// through its pinned link (a daemon killed keeps forwarding); the next
// Load takes the same link over and swaps in its program (no detach in
// between); a mode change re-attaches; Remove leaves no link and no pin.
func TestPinnedLinkOutlivesTheProcess(t *testing.T) {
	dir := pinDir(t)
	e := newEnv(t, Options{PinPath: dir})
	var err error
	e.inNS(func() { err = e.dp.Attach("xcp", loadbalancer.ModeGeneric) })
	if err != nil {
		t.Fatal(err)
	}
	first := attachedLink(t, dir, "xcp", loadbalancer.ModeGeneric)
	if err := e.dp.Close(); err != nil {
		t.Fatal(err)
	}
	if got := attachedLink(t, dir, "xcp", loadbalancer.ModeGeneric); got.ID != first.ID || got.Program != first.Program {
		t.Fatalf("after Close the pinned link is %d (program %d), want link %d still running program %d", got.ID, got.Program, first.ID, first.Program)
	}

	dp, err := Load(Options{PinPath: dir, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	e.inNS(func() { err = dp.Attach("xcp", loadbalancer.ModeGeneric) })
	if err != nil {
		t.Fatal(err)
	}
	second := attachedLink(t, dir, "xcp", loadbalancer.ModeGeneric)
	if second.ID != first.ID {
		t.Errorf("the new Load attached link %d, want the pinned link %d updated in place", second.ID, first.ID)
	}
	if want := programID(t, dp.Program()); second.Program != want || want == first.Program {
		t.Errorf("the pinned link runs program %d, want the new program %d (the old was %d)", second.Program, want, first.Program)
	}
	if got, _ := PinnedLinks(dir); !slices.Equal(got, []string{"xcp"}) {
		t.Errorf("PinnedLinks = %v, want [xcp]", got)
	}
	if err := dp.Close(); err != nil {
		t.Fatal(err)
	}

	// native mode: the generic link cannot change mode, so it goes
	dp, err = Load(Options{PinPath: dir, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.inNS(func() { err = dp.Attach("xcp", loadbalancer.ModeNative) })
	if err != nil {
		t.Fatal(err)
	}
	native := attachedLink(t, dir, "xcp", loadbalancer.ModeNative)
	if native.ID == first.ID {
		t.Error("a mode change kept the link of the other mode")
	}
	if _, err := os.Stat(linkPin(dir, "xcp", loadbalancer.ModeGeneric)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the generic-mode pin is still there after the native attach: %v", err)
	}

	if err := dp.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the pin directory: %v", err)
	}
	if l, err := link.NewFromID(native.ID); err == nil {
		l.Close()
		t.Errorf("link %d still exists after Remove", native.ID)
	}
}

// TestLayoutStamp: a pinned map whose stamp differs from this build's
// (a value layout that changed but kept its size) is refused by name;
// with DropIncompatible it alone is replaced, and the other maps keep
// what they hold. Pins without any stamp (an older xlb) are refused too.
func TestLayoutStamp(t *testing.T) {
	dir := pinDir(t)
	key := pinOneConnection(t, Options{PinPath: dir})

	stamps, err := ebpf.LoadPinnedMap(filepath.Join(dir, layoutMapName), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stamps.Close()
	var name [layoutKeySize]byte
	copy(name[:], "ct4")
	if err := stamps.Put(name, uint64(12345)); err != nil {
		t.Fatal(err)
	}
	_, err = Load(Options{PinPath: dir, CPUs: 1})
	var le *LayoutError
	if !errors.As(err, &le) || !slices.Equal(le.Maps, []string{"ct4"}) || le.Unknown {
		t.Fatalf("load over a ct4 of another layout: %v, want a LayoutError naming ct4", err)
	}

	dp, err := Load(Options{PinPath: dir, CPUs: 1, DropIncompatible: true})
	if err != nil {
		t.Fatalf("load with DropIncompatible: %v", err)
	}
	defer dp.Close()
	if !slices.Equal(dp.DroppedMaps(), []string{"ct4"}) {
		t.Errorf("DroppedMaps = %v, want [ct4]", dp.DroppedMaps())
	}
	n := 0
	if err := dp.Conns(func(c loadbalancer.ConnEntry) bool { n++; return true }); err != nil || n != 0 {
		t.Errorf("the replaced connection table holds %d entries (%v), want 0", n, err)
	}
	if got := dp.Services(); len(got) != 1 || got[0].Key != key {
		t.Errorf("services after dropping ct4: %+v, want the one service kept", got)
	}
	dp.Close()

	// pins of an xlb from before stamps: no stamp map at all
	if err := os.Remove(filepath.Join(dir, layoutMapName)); err != nil {
		t.Fatal(err)
	}
	_, err = Load(Options{PinPath: dir, CPUs: 1})
	if !errors.As(err, &le) || !le.Unknown || len(le.Maps) < 2 {
		t.Fatalf("load over unstamped pins: %v, want a LayoutError for every pinned map", err)
	}
}

// TestLayoutStringSeesFieldChanges: the stamp changes when fields move,
// change type or name, even at the same size; not when nothing changes.
func TestLayoutStringSeesFieldChanges(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	u16 := &btf.Int{Name: "u16", Size: 2}
	value := func(members ...btf.Member) *ebpf.MapSpec {
		return &ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Key: u32,
			Value: &btf.Struct{Name: "v", Size: 8, Members: members}}
	}
	base := value(btf.Member{Name: "a", Type: u32}, btf.Member{Name: "b", Type: u32, Offset: 32})
	for _, c := range []struct {
		name string
		spec *ebpf.MapSpec
		same bool
	}{
		{"identical", value(btf.Member{Name: "a", Type: u32}, btf.Member{Name: "b", Type: u32, Offset: 32}), true},
		{"swapped", value(btf.Member{Name: "b", Type: u32}, btf.Member{Name: "a", Type: u32, Offset: 32}), false},
		{"retyped", value(btf.Member{Name: "a", Type: u32}, btf.Member{Name: "b", Type: u16, Offset: 32}, btf.Member{Name: "c", Type: u16, Offset: 48}), false},
		{"renamed", value(btf.Member{Name: "a", Type: u32}, btf.Member{Name: "x", Type: u32, Offset: 32}), false},
	} {
		if got := layoutStamp(c.spec) == layoutStamp(base); got != c.same {
			t.Errorf("%s: same stamp = %v, want %v\n%s\n%s", c.name, got, c.same, layoutString(c.spec), layoutString(base))
		}
	}
	bigger := value(btf.Member{Name: "a", Type: u32}, btf.Member{Name: "b", Type: u32, Offset: 32})
	bigger.MaxEntries = 32
	if layoutStamp(bigger) == layoutStamp(base) {
		t.Error("a resized map keeps its stamp")
	}
}

func TestLinkPinNames(t *testing.T) {
	for _, ifname := range []string{"eth0", "eth0.100", "a%2eb", "x-y", "v.%.w"} {
		path := linkPin("/sys/fs/bpf/x", ifname, loadbalancer.ModeGeneric)
		file := filepath.Base(path)
		if strings.Contains(file, ".") {
			t.Errorf("%q: pin name %q has a dot (bpffs refuses it)", ifname, file)
		}
		if got, ok := linkPinIfname(file); !ok || got != ifname {
			t.Errorf("%q: pin name %q reads back as %q, %v", ifname, file, got, ok)
		}
	}
}
