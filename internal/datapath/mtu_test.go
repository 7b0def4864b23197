// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// mtuEnv is a data path in a namespace whose client veth pair's MTUs a
// test sets.
type mtuEnv struct{ *testEnv }

func (e mtuEnv) setMTU(t *testing.T, ifname string, mtu int) {
	t.Helper()
	if out, err := exec.Command("ip", "-n", e.ns, "link", "set", "dev", ifname, "mtu", fmt.Sprint(mtu)).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s mtu %d: %v: %s", ifname, mtu, err, out)
	}
}

func (e mtuEnv) attach(mode loadbalancer.AttachMode) (err error) {
	e.inNS(func() { err = e.dp.Attach(progns.ClientIf, mode) })
	return err
}

func (e mtuEnv) detach(t *testing.T) {
	t.Helper()
	var err error
	e.inNS(func() { err = e.dp.Detach(progns.ClientIf) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestAttachRefusesMTUAboveOneBuffer: a single-buffer program (a kernel
// before 5.18) in native mode on an interface whose MTU (or whose veth
// peer's) one buffer cannot hold is refused with an MTUError naming the
// interface and the limit, before anything is attached; generic mode
// attaches.
func TestAttachRefusesMTUAboveOneBuffer(t *testing.T) {
	e := mtuEnv{newEnv(t, Options{SingleBuffer: true})}
	if e.dp.MultiBuffer() {
		t.Fatal("Options.SingleBuffer loaded a multi-buffer program")
	}
	limit := SingleBufferMTU()
	setMTU := func(ifname string, mtu int) { e.setMTU(t, ifname, mtu) }
	attach := e.attach
	for _, tc := range []struct {
		name            string
		own, peer       int
		wantPeer        bool
		wantMTU         int
		wantInTheReport string
	}{
		{"own MTU", 9000, 1500, false, 9000, fmt.Sprintf("attach xdp to %s (native mode): MTU 9000 is above %d", progns.ClientIf, limit)},
		{"the peer's MTU", 1500, 9000, true, 0, fmt.Sprintf("attach xdp to %s (native mode): its veth peer's MTU is above %d", progns.ClientIf, limit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMTU(progns.ClientIf, tc.own)
			setMTU(progns.ClientIf+"p", tc.peer)
			err := attach(loadbalancer.ModeNative)
			var me *MTUError
			if !errors.As(err, &me) || me.Peer != tc.wantPeer || me.MTU != tc.wantMTU || me.Limit != limit ||
				!strings.Contains(err.Error(), tc.wantInTheReport) {
				t.Fatalf("native attach: %v, want an MTUError: %q", err, tc.wantInTheReport)
			}
			if err := attach(loadbalancer.ModeGeneric); err != nil {
				t.Fatalf("generic attach: %v", err)
			}
			e.detach(t)
		})
	}
	setMTU(progns.ClientIf+"p", limit)
	setMTU(progns.ClientIf, limit)
	if err := attach(loadbalancer.ModeNative); err != nil {
		t.Fatalf("native attach at MTU %d, the limit: %v", limit, err)
	}
}

// TestAttachMultiBufferJumboMTU: the multi-buffer program attaches in
// native mode to a veth at MTU 9000 whose peer is at 9000 too, and the
// peer's MTU can be raised after the attach: veth raises its cap for a
// multi-buffer program.
func TestAttachMultiBufferJumboMTU(t *testing.T) {
	if !xdpfrags.Supported() {
		testenv.Unavailable(t, "this kernel has no multi-buffer XDP (Linux 5.18)")
	}
	e := mtuEnv{newEnv(t, Options{})}
	if !e.dp.MultiBuffer() {
		t.Fatal("the kernel has multi-buffer XDP, the program was loaded without")
	}
	e.setMTU(t, progns.ClientIf, 9000)
	e.setMTU(t, progns.ClientIf+"p", 9000)
	if err := e.attach(loadbalancer.ModeNative); err != nil {
		t.Fatalf("native attach at MTU 9000: %v", err)
	}
	e.setMTU(t, progns.ClientIf+"p", 1500)
	e.setMTU(t, progns.ClientIf+"p", 9000)
	e.detach(t)
}
