// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/testenv"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// jumboMTU is the MTU of every link in TestJumboFrames.
const jumboMTU = 9000

// jumboSegments is the least MSS that shows a connection used jumbo
// frames: above what one XDP buffer holds (3506 with 4 KiB pages).
const jumboSegments = 8000

// segmentSizes returns the MSS a connection sends with and the one it
// has seen its peer send (TCP_INFO).
func segmentSizes(conn net.Conn) (snd, rcv uint32, err error) {
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var info *unix.TCPInfo
	var serr error
	if err := raw.Control(func(fd uintptr) { info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return 0, 0, err
	}
	if serr != nil {
		return 0, 0, serr
	}
	return info.Snd_mss, info.Rcv_mss, nil
}

// TestJumboFrames: every link of the lab at MTU 9000 (client, balancer,
// reals), xlb in native mode with its multi-buffer program and Linux
// defaults otherwise. A 256 KiB upload and download through the VIP
// complete byte for byte over IPv4 and IPv6 in segments of 8000 bytes
// and more, frames of several XDP buffers, with no ICMP error from xlb
// and no drop but a first packet's to a next hop not yet resolved.
func TestJumboFrames(t *testing.T) {
	if !xdpfrags.Supported() {
		testenv.Unavailable(t, "this kernel has no multi-buffer XDP (Linux 5.18)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := testTopology(t, 2)
	_, d := startLabWith(t, ctx, topo, topo.Config("rr"))
	if err := topo.SetMTU(jumboMTU); err != nil {
		t.Fatal(err)
	}

	const size = 256 << 10
	want, sum := patternBytes(size)
	for _, vip := range []netip.Addr{topo.VIP(), topo.VIP6()} {
		addr := netip.AddrPortFrom(vip, ServicePort).String()
		for _, dir := range []string{"upload", "download"} {
			err := netns.Run(topo.Client(), func() error {
				conn, err := dialVIP(ctx, addr)
				if err != nil {
					return err
				}
				defer conn.Close()
				if err := transfer(ctx, conn, addr, dir, want, sum); err != nil {
					return err
				}
				snd, rcv, err := segmentSizes(conn)
				if err != nil {
					return err
				}
				if mss := map[string]uint32{"upload": snd, "download": rcv}[dir]; mss < jumboSegments {
					return fmt.Errorf("segments of %d bytes (sent %d, received %d): no jumbo frames", mss, snd, rcv)
				}
				return nil
			})
			if err != nil {
				if st, serr := d.Client().Stats(ctx); serr == nil {
					t.Logf("verdicts %v, drops %v", nonZero(st.Verdicts), nonZero(st.Drops))
				}
				t.Fatalf("%s of %d bytes, %s: %v", dir, size, addr, err)
			}
		}
	}
	st, err := d.Client().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a first packet to a next hop not yet resolved is dropped as
	// no_neigh and retransmitted (see the operator guide); any other
	// drop, or a too-big error, would be the jumbo frames'
	drops := nonZero(st.Drops)
	delete(drops, "no_neigh")
	if st.ICMPTooBigSent != 0 || len(drops) != 0 {
		t.Errorf("ICMP errors sent %d, drops %v: want none at MTU %d everywhere", st.ICMPTooBigSent, drops, jumboMTU)
	}
	t.Logf("verdicts %v", nonZero(st.Verdicts))
}
