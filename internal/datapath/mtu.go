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
// device's own MTU the same way.
const (
	xdpHeadroom      = 256
	skbSharedInfo    = 320
	ethernetHeader   = 14
	singleBufferNote = "xlb's data path takes frames of one buffer (XDP multi-buffer is not supported yet)"
)

// SingleBufferMTU is the largest MTU whose frames fit in one XDP buffer
// on this machine's page size: 3506 with 4 KiB pages.
func SingleBufferMTU() int {
	return os.Getpagesize() - xdpHeadroom - skbSharedInfo - ethernetHeader
}

// MTUError says that an interface's MTU (or, on veth, its peer's) is above
// what one XDP buffer holds, so native XDP cannot be attached.
type MTUError struct {
	Interface string
	MTU       int  // the interface's MTU; 0 when it is the peer's that is too large
	Peer      bool // the kernel refused for the veth peer's MTU
	Limit     int
}

func (e *MTUError) Error() string {
	if e.Peer {
		return fmt.Sprintf("attach xdp to %s (native mode): its veth peer's MTU is above %d, what one buffer holds; %s: "+
			"lower the peer's MTU to %d or less, or attach in generic mode (xdp_mode: generic)", e.Interface, e.Limit,
			singleBufferNote, e.Limit)
	}
	return fmt.Sprintf("attach xdp to %s (native mode): MTU %d is above %d, what one buffer holds; %s: lower the MTU "+
		"to %d or less, or attach in generic mode (xdp_mode: generic)", e.Interface, e.MTU, e.Limit, singleBufferNote, e.Limit)
}

// checkMTU refuses, before a native attach, an interface whose MTU one
// buffer cannot hold.
func checkMTU(ifname string, mtu int) error {
	if limit := SingleBufferMTU(); mtu > limit {
		return &MTUError{Interface: ifname, MTU: mtu, Limit: limit}
	}
	return nil
}

// attachError explains an attach the kernel refused: in native mode,
// ERANGE from a veth is its peer's MTU (the device's own was checked
// before).
func attachError(ifname string, mode loadbalancer.AttachMode, err error) error {
	if mode == loadbalancer.ModeNative && errors.Is(err, unix.ERANGE) {
		return &MTUError{Interface: ifname, Peer: true, Limit: SingleBufferMTU()}
	}
	return fmt.Errorf("attach xdp to %s (%s mode): %w", ifname, mode, err)
}
