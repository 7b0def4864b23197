// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// XDP without multi-buffer support takes a frame in one buffer: a page
// less the headroom XDP reserves (XDP_PACKET_HEADROOM) and the room the
// kernel keeps at the end of it for an skb (skb_shared_info, 320 bytes on
// 64-bit kernels), less the Ethernet header. veth refuses XDP on a device
// whose peer's MTU is larger (veth_xdp_set) and NIC drivers check the
// device's own MTU the same way. A multi-buffer program (xdp.frags, Linux
// 5.18) lifts the limit where the driver carries frames of several
// buffers: veth does, and so do many NIC drivers, not all.
const (
	xdpHeadroom    = 256
	skbSharedInfo  = 320
	ethernetHeader = 14
)

// SingleBufferMTU is the largest MTU whose frames fit in one XDP buffer
// on this machine's page size: 3506 with 4 KiB pages.
func SingleBufferMTU() int {
	return os.Getpagesize() - xdpHeadroom - skbSharedInfo - ethernetHeader
}

// MTUError says that an interface's MTU (or, on veth, its peer's) is above
// what one XDP buffer holds, and that native XDP cannot carry it: the
// program is single-buffer (a kernel before 5.18, or
// Options.SingleBuffer), or the driver refused the multi-buffer one.
type MTUError struct {
	Interface string
	MTU       int  // the interface's MTU; 0 when it is the peer's that is too large
	Peer      bool // the kernel refused for the veth peer's MTU
	Limit     int
	// Driver is the driver's refusal of a multi-buffer program; nil
	// when the program was single-buffer.
	Driver error
}

func (e *MTUError) Error() string {
	what := fmt.Sprintf("MTU %d is above %d, what one buffer holds", e.MTU, e.Limit)
	if e.Peer {
		what = fmt.Sprintf("its veth peer's MTU is above %d, what one buffer holds", e.Limit)
	}
	why := "this kernel has no multi-buffer XDP (Linux 5.18)"
	if e.Driver != nil {
		why = fmt.Sprintf("the driver refused the multi-buffer program (%v): it may not carry frames of several buffers", e.Driver)
	}
	lower := "the MTU"
	if e.Peer {
		lower = "the peer's MTU"
	}
	return fmt.Sprintf("attach xdp to %s (native mode): %s, and %s: lower %s to %d or less, or attach in generic mode (xdp_mode: generic)",
		e.Interface, what, why, lower, e.Limit)
}

func (e *MTUError) Unwrap() error { return e.Driver }

// checkMTU refuses, before a native attach of a single-buffer program, an
// interface whose MTU one buffer cannot hold.
func checkMTU(ifname string, mtu int) error {
	if limit := SingleBufferMTU(); mtu > limit {
		return &MTUError{Interface: ifname, MTU: mtu, Limit: limit}
	}
	return nil
}

// attachError explains an attach the kernel refused. In native mode,
// ERANGE from a veth is its peer's MTU (the device's own was checked
// before a single-buffer program's attach); a multi-buffer program
// refused on an interface whose MTU one buffer cannot hold is the
// driver's lack of multi-buffer support.
func attachError(ifname string, mode loadbalancer.AttachMode, mtu int, frags bool, err error) error {
	limit := SingleBufferMTU()
	switch {
	case mode != loadbalancer.ModeNative:
	case errors.Is(err, unix.ERANGE):
		return &MTUError{Interface: ifname, Peer: true, Limit: limit}
	case frags && mtu > limit:
		return &MTUError{Interface: ifname, MTU: mtu, Limit: limit, Driver: err}
	}
	return fmt.Errorf("attach xdp to %s (%s mode): %w", ifname, mode, err)
}
