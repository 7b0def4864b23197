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
)

// TestAttachRefusesMTUAboveOneBuffer: native XDP on an interface whose
// MTU (or whose veth peer's) one buffer cannot hold is refused with an
// MTUError naming the interface and the limit, before anything is
// attached; generic mode attaches.
func TestAttachRefusesMTUAboveOneBuffer(t *testing.T) {
	e := newEnv(t, Options{})
	limit := SingleBufferMTU()
	setMTU := func(ifname string, mtu int) {
		t.Helper()
		if out, err := exec.Command("ip", "-n", e.ns, "link", "set", "dev", ifname, "mtu", fmt.Sprint(mtu)).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s mtu %d: %v: %s", ifname, mtu, err, out)
		}
	}
	attach := func(mode loadbalancer.AttachMode) (err error) {
		e.inNS(func() { err = e.dp.Attach(progns.ClientIf, mode) })
		return err
	}
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
			var derr error
			e.inNS(func() { derr = e.dp.Detach(progns.ClientIf) })
			if derr != nil {
				t.Fatal(derr)
			}
		})
	}
	setMTU(progns.ClientIf+"p", limit)
	setMTU(progns.ClientIf, limit)
	if err := attach(loadbalancer.ModeNative); err != nil {
		t.Fatalf("native attach at MTU %d, the limit: %v", limit, err)
	}
}
