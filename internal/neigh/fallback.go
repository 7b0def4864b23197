// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// discardPort is the UDP port the fallback's probes go to (discard, RFC
// 863): a host that listens drops them, one that does not answers with
// an ICMP port unreachable; either way the datagram is harmless.
const discardPort = 9

// udpProbe makes the kernel resolve addr on dev, for kernels without
// managed neighbour entries: it sends one empty UDP datagram to addr's
// discard port from a socket bound to dev (SO_BINDTODEVICE). Sending
// makes the kernel create the neighbour entry and resolve it (ARP or
// neighbour solicitation), the datagram waiting in the entry's queue
// meanwhile.
func udpProbe(dev string, addr netip.Addr) error {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var bindErr error
		if err := c.Control(func(fd uintptr) {
			bindErr = unix.BindToDevice(int(fd), dev)
		}); err != nil {
			return err
		}
		if bindErr != nil {
			return fmt.Errorf("bind to %s: %w", dev, bindErr)
		}
		return nil
	}}
	to := &net.UDPAddr{IP: addr.Unmap().AsSlice(), Port: discardPort}
	if addr.Is6() && (addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast()) {
		to.Zone = dev
	}
	conn, err := d.Dial("udp", to.String())
	if err != nil {
		return fmt.Errorf("udp probe to %s: %w", to, err)
	}
	defer conn.Close()
	if _, err := conn.Write(nil); err != nil {
		return fmt.Errorf("udp probe to %s: %w", to, err)
	}
	return nil
}
