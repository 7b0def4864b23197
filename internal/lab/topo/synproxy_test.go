// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"encoding/binary"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// csum16 is the Internet checksum of b, with sum added first.
func csum16(sum uint32, b []byte) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// spoofedSYN is a raw IPv4 packet: a TCP SYN from src to dst with an MSS
// option, as a SYN flood sends it.
func spoofedSYN(src, dst netip.AddrPort, seq uint32) []byte {
	b := make([]byte, 20+24)
	b[0], b[8], b[9] = 0x45, 64, unix.IPPROTO_TCP
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[10:], csum16(0, b[:20]))
	tcp := b[20:]
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12], tcp[13] = 6<<4, 0x02
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	copy(tcp[20:], []byte{2, 4, 0x05, 0xb4})
	pseudo := uint32(binary.BigEndian.Uint16(s[0:])) + uint32(binary.BigEndian.Uint16(s[2:])) +
		uint32(binary.BigEndian.Uint16(d[0:])) + uint32(binary.BigEndian.Uint16(d[2:])) +
		unix.IPPROTO_TCP + uint32(len(tcp))
	binary.BigEndian.PutUint16(tcp[16:], csum16(pseudo, tcp))
	return b
}

// floodSYNs sends n spoofed SYNs to dst from namespace ns, from sources
// that source(i) gives, as fast as a raw socket takes them.
func floodSYNs(ns string, dst netip.AddrPort, n int, source func(i int) netip.AddrPort) (sent int, err error) {
	err = netns.Run(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Addr: dst.Addr().As4()}
		for i := range n {
			if err := unix.Sendto(fd, spoofedSYN(source(i), dst, uint32(i)*7919), 0, sa); err == nil {
				sent++
			}
		}
		return nil
	})
	return sent, err
}

// synsTo counts the frames of a capture that are TCP SYNs (without ACK)
// to port, over IPv4 and IPv6.
func synsTo(frames [][]byte, port uint16) int {
	n := 0
	for _, f := range frames {
		if len(f) < 14 {
			continue
		}
		var tcp []byte
		switch binary.BigEndian.Uint16(f[12:]) {
		case 0x0800:
			if len(f) >= 34 && f[23] == unix.IPPROTO_TCP {
				tcp = f[14+int(f[14]&0xf)*4:]
			}
		case 0x86dd:
			if len(f) >= 54 && f[20] == unix.IPPROTO_TCP {
				tcp = f[54:]
			}
		}
		if len(tcp) >= 14 && binary.BigEndian.Uint16(tcp[2:]) == port && tcp[13]&0x12 == 0x02 {
			n++
		}
	}
	return n
}

// TestSynProxyUnderFlood: with syn_proxy on, 20,000 spoofed SYNs from 100
// sources reach xlb while clients open connections to the same VIP over
// IPv4 and IPv6 and send a request right after their handshake. Every
// legitimate connection completes byte for byte; the real sees exactly
// one SYN per legitimate connection (none of the flood's: a SYN reaches
// a real only after its cookie came back); the connection table holds
// the legitimate connections alone; and the counters say so.
func TestSynProxyUnderFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo := testTopology(t, 1)
	config := strings.ReplaceAll(topo.Config("rr"), "    protocol: tcp\n", "    protocol: tcp\n    syn_proxy: true\n")
	_, d := startLabWith(t, ctx, topo, config)
	frames := captureIn(t, topo.Real(1))

	const floodSYNsSent, legitimate = 20000, 24
	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	var wg sync.WaitGroup
	var sent int
	var floodErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		sent, floodErr = floodSYNs(topo.Client(), vip, floodSYNsSent, func(i int) netip.AddrPort {
			return netip.AddrPortFrom(topo.addr(1, 100+i%100), uint16(10000+i%50000))
		})
	}()
	errs := make([]error, legitimate)
	for i := range legitimate {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := vip
			if i%3 == 2 {
				addr = netip.AddrPortFrom(topo.VIP6(), ServicePort)
			}
			errs[i] = netns.Run(topo.Client(), func() error {
				conn, err := dialVIP(ctx, addr.String())
				if err != nil {
					return err
				}
				defer conn.Close()
				want, sum := patternBytes(8192)
				return transfer(ctx, conn, addr.String(), "upload", want, sum)
			})
		}()
	}
	wg.Wait()
	if floodErr != nil {
		t.Fatalf("flood: %v", floodErr)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("legitimate connection %d: %v", i, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the last frames to the capture
	if n := synsTo(frames(), ServicePort); n != legitimate {
		t.Errorf("the real saw %d SYNs, want %d: one per legitimate connection, none of the flood's", n, legitimate)
	}

	st, err := d.Client().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := st.Events
	if ev["syncookie_valid"] != legitimate || ev["synproxy_opened"] != legitimate {
		t.Errorf("events %v: want %d valid cookies and %d connections opened", ev, legitimate, legitimate)
	}
	if ev["syncookie_sent"] <= legitimate {
		t.Errorf("%d cookies sent for %d flood SYNs sent and %d connections", ev["syncookie_sent"], sent, legitimate)
	}
	conns, err := d.Client().Conns(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) > 2*legitimate {
		t.Errorf("%d connection entries after the flood, want at most %d (the legitimate connections')", len(conns), 2*legitimate)
	}
	for _, c := range conns {
		if !c.SynProxy {
			t.Errorf("entry %s -> %s was not opened by the SYN proxy", c.From, c.To)
		}
	}
	t.Logf("flood: %d SYNs sent, %d cookies sent, %d connections through, %d entries, early data kept %d, drops %v",
		sent, ev["syncookie_sent"], ev["synproxy_opened"], len(conns), ev["synproxy_early_kept"], nonZero(st.Drops))
}
