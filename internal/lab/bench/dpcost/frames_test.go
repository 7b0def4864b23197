// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/lab/progns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
)

func TestConn(t *testing.T) {
	for _, tt := range []struct {
		name        string
		have        int
		client, loc string
	}{
		{"first", 0, "10.128.0.0:10000", "10.200.0.0:1025"},
		{"second local IP", 30_000, "10.128.0.0:40000", "10.200.0.1:1025"},
		{"second client block", 50_000, "10.128.0.1:10000", "10.200.0.1:21025"},
		{"10M", 9_999_999, "10.128.0.199:59999", "10.200.1.77:11024"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, l := conn(tt.have)
			if c.String() != tt.client || l.String() != tt.loc {
				t.Errorf("conn(%d) = %s, %s; want %s, %s", tt.have, c, l, tt.client, tt.loc)
			}
		})
	}
}

// sum16 is the ones' complement sum of b, folded.
func sum16(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return sum
}

// tcpChecksumOK says whether the TCP checksum of an untagged IPv4 frame
// is complete and right.
func tcpChecksumOK(b []byte) bool {
	seg := b[offSport:]
	pseudo := sum16(6+uint32(len(seg)), b[offSrc4:offSrc4+8])
	return sum16(pseudo, seg) == 0xffff
}

// TestPartialFrame: the frame of the partial-checksum row holds the
// pseudo-header sum only, and the data path completes it.
func TestPartialFrame(t *testing.T) {
	client, vip := netip.AddrPortFrom(progns.Client4, 10000), netip.AddrPortFrom(progns.VIP4, 80)
	in := partialTCPFrame(progns.ClientMAC, progns.RouterMAC, client, vip)
	seg := len(in) - offSport
	if got, want := uint16(sum16(6+uint32(seg), in[offSrc4:offSrc4+8])), binary.BigEndian.Uint16(in[offTCPCsum:]); got != want {
		t.Fatalf("checksum field %#04x, want the pseudo-header sum %#04x", want, got)
	}
	if tcpChecksumOK(in) {
		t.Fatal("the partial frame's checksum is complete")
	}

	testenv.RequireRoot(t, "loads BPF programs and creates network namespaces")
	e, err := newEnv(fmt.Sprintf("xlbt-%d-partial", os.Getpid()), datapath.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	key := loadbalancer.ServiceKey{VIP: progns.VIP4, Port: 80, Proto: loadbalancer.TCP}
	if err := e.dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.MaglevHash, LocalIPs: []netip.Addr{progns.LocalIP4}}); err != nil {
		t.Fatal(err)
	}
	if err := e.dp.SetReals(key, []loadbalancer.Real{{Addr: progns.RealAddr(false, 1), Port: 80, Weight: 1}}); err != nil {
		t.Fatal(err)
	}
	syn := tcpFrame(progns.ClientMAC, e.Client.HardwareAddr, client, vip, true)
	for _, frame := range [][]byte{syn, partialTCPFrame(progns.ClientMAC, e.Client.HardwareAddr, client, vip)} {
		ret, out, err := e.Run(e.dp.Program(), frame, nil)
		if err != nil {
			t.Fatalf("BPF_PROG_RUN: %v", err)
		}
		if v := datapath.Verdict(ret); v != datapath.XDPRedirect {
			t.Fatalf("verdict %s, want %s", v, datapath.XDPRedirect)
		}
		dst := netip.AddrFrom4([4]byte(out[offDst4 : offDst4+4]))
		if dst != progns.RealAddr(false, 1) || !tcpChecksumOK(out) {
			t.Errorf("output to %s (want %s), checksum complete: %v", dst, progns.RealAddr(false, 1), tcpChecksumOK(out))
		}
	}
}

// TestFillConns: a filled table forwards both ways without a handshake.
func TestFillConns(t *testing.T) {
	testenv.RequireRoot(t, "loads BPF programs and creates network namespaces")
	table, err := Measure(Options{Conns: []int{1000}, Repeat: 100, Namespace: fmt.Sprintf("xlbt-%d-fill", os.Getpid())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || table.Rows[0].FwdNs == 0 || table.Rows[0].RevNs == 0 || table.Rows[0].Ct4Bytes == 0 {
		t.Errorf("table %+v: a figure is missing", table)
	}
}
