// SPDX-License-Identifier: Apache-2.0

package txmon

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// requirePrivileged skips a test that needs root, unless
// XLB_REQUIRE_PRIVILEGED=1 asks for it: then it fails.
func requirePrivileged(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("XLB_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal("needs root (XLB_REQUIRE_PRIVILEGED=1)")
	}
	t.Skip("needs root")
}

// mustRun runs a command and fails the test on error.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// addNetns makes a network namespace that is removed when the test ends,
// also on failure.
func addNetns(t *testing.T, name string) {
	t.Helper()
	mustRun(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
}

// ifindexIn returns the index of ifname in namespace ns.
func ifindexIn(t *testing.T, ns, ifname string) int {
	t.Helper()
	links, err := parseIPLinks([]byte(mustRun(t, "ip", "-n", ns, "-j", "link", "show", "dev", ifname)))
	if err != nil || len(links) != 1 {
		t.Fatalf("ifindex of %s in %s: %v %v", ifname, ns, links, err)
	}
	return links[0].Ifindex
}

// rxPackets returns the received-packet counter of ifname in namespace ns.
func rxPackets(t *testing.T, ns, ifname string) uint64 {
	t.Helper()
	var links []struct {
		Stats struct {
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	out := mustRun(t, "ip", "-n", ns, "-s", "-j", "link", "show", "dev", ifname)
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("rx packets of %s: %v: %s", ifname, err, out)
	}
	return links[0].Stats.RX.Packets
}

// redirectAll attaches, in driver mode, an XDP program that redirects
// every frame received on from into to, through a DEVMAP_HASH as xlb
// does. Both are interfaces of namespace ns. It is a test fixture, not
// part of the monitor.
func redirectAll(t *testing.T, ns string, from, to int) {
	t.Helper()
	err := netns.Run(ns, func() error {
		devmap, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 1})
		if err != nil {
			return fmt.Errorf("devmap: %w", err)
		}
		t.Cleanup(func() { devmap.Close() })
		if err := devmap.Put(uint32(to), uint32(to)); err != nil {
			return fmt.Errorf("devmap put %d: %w", to, err)
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:    "redirect_all",
			Type:    ebpf.XDP,
			License: "Dual BSD/GPL",
			Instructions: asm.Instructions{
				asm.LoadMapPtr(asm.R1, devmap.FD()),
				asm.Mov.Imm(asm.R2, int32(to)),
				asm.Mov.Imm(asm.R3, 0), // flags: XDP_ABORTED when the key is missing
				asm.FnRedirectMap.Call(),
				asm.Return(),
			},
		})
		if err != nil {
			return fmt.Errorf("xdp program: %w", err)
		}
		t.Cleanup(func() { prog.Close() })
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: from, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attach xdp to ifindex %d: %w", from, err)
		}
		t.Cleanup(func() { l.Close() })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitCounts reads m until ok holds for the counts since before, for at
// most 3 s, and returns the last difference.
func waitCounts(t *testing.T, m *Monitor, before Counts, ok func(Counts) bool) Counts {
	t.Helper()
	var d Counts
	for range 150 {
		now, err := m.Counts()
		if err != nil {
			t.Fatal(err)
		}
		if d = now.Sub(before); ok(d) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

// checkIn runs CheckVethPeer in namespace ns.
func checkIn(t *testing.T, ns, ifname string) string {
	t.Helper()
	var warning string
	err := netns.Run(ns, func() (err error) {
		warning, err = CheckVethPeer(ifname)
		return err
	})
	if err != nil {
		t.Fatalf("CheckVethPeer(%s) in %s: %v", ifname, ns, err)
	}
	return warning
}

// TestVethPeerLoss builds two namespaces: lb has in0 (peer in1 in the
// peer namespace), where a redirect-everything XDP program runs, and a0
// (peer b0 in the peer namespace), the redirect target. b0 keeps Linux
// defaults: no XDP, GRO off. Datagrams sent from the peer namespace
// through in1 are redirected into a0 and lost; the monitor counts them and
// CheckVethPeer names the fix. With GRO on at b0 they arrive.
func TestVethPeerLoss(t *testing.T) {
	requirePrivileged(t)
	const frames = 8
	suffix := fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid())
	lb, peer := "txmon-lb-"+suffix, "txmon-peer-"+suffix
	addNetns(t, lb)
	addNetns(t, peer)
	// An ifindex for in0 unlikely to be shared with another namespace's
	// XDP interface: the monitor filters on it.
	in0Index := 30000 + os.Getpid()%20000
	for _, ns := range []string{lb, peer} {
		// No IPv6: nothing but the test's datagrams crosses in1.
		mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	for _, args := range [][]string{
		{"-n", lb, "link", "add", "in0", "index", fmt.Sprint(in0Index), "address", "02:00:00:00:00:01", "type", "veth", "peer", "name", "in1", "netns", peer},
		{"-n", lb, "link", "add", "a0", "type", "veth", "peer", "name", "b0", "netns", peer},
		{"-n", lb, "addr", "add", "10.199.0.1/24", "dev", "in0"},
		{"-n", peer, "addr", "add", "10.199.0.2/24", "dev", "in1"},
		{"-n", peer, "neigh", "replace", "10.199.0.1", "lladdr", "02:00:00:00:00:01", "dev", "in1", "nud", "permanent"},
		{"-n", lb, "link", "set", "in0", "up"},
		{"-n", lb, "link", "set", "a0", "up"},
		{"-n", peer, "link", "set", "in1", "up"},
		{"-n", peer, "link", "set", "b0", "up"},
	} {
		mustRun(t, "ip", args...)
	}
	if got := ifindexIn(t, lb, "in0"); got != in0Index {
		t.Fatalf("in0 has ifindex %d, want %d", got, in0Index)
	}
	a0 := ifindexIn(t, lb, "a0")

	m, err := Open(in0Index)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	// A monitor of another interface does not count in0's losses.
	other, err := Open(in0Index + 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	redirectAll(t, lb, in0Index, a0)

	var conn net.Conn
	if err := netns.Run(peer, func() (err error) {
		conn, err = net.Dial("udp4", "10.199.0.1:9")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	send := func() {
		t.Helper()
		for i := range frames {
			if _, err := fmt.Fprintf(conn, "txmon test frame %d", i); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Linux defaults at b0: every redirected frame is lost.
	if w := checkIn(t, lb, "a0"); !strings.Contains(w, "ip netns exec "+peer+" ethtool -K b0 gro on") {
		t.Errorf("CheckVethPeer(a0) = %q, want the gro on command", w)
	}
	if w := checkIn(t, lb, "lo"); w != "" {
		t.Errorf("CheckVethPeer(lo) = %q, want none", w)
	}
	before, err := m.Counts()
	if err != nil {
		t.Fatal(err)
	}
	rx := rxPackets(t, peer, "b0")
	send()
	// Kernels 6.3+ refuse the redirect at once (a0 does not advertise
	// NDO_XMIT: xdp_redirect_err); older ones fail the flush (devmap_xmit).
	d := waitCounts(t, m, before, func(d Counts) bool { return d.Lost() >= frames })
	if d.Lost() < frames || d.RedirectTxSent != 0 {
		t.Errorf("b0 without XDP or GRO: counted %+v, want %d frames lost, none sent", d, frames)
	}
	if got := rxPackets(t, peer, "b0"); got != rx {
		t.Errorf("b0 received %d packets while it could not", got-rx)
	}
	if c, err := other.Counts(); err != nil || c != (Counts{}) {
		t.Errorf("monitor of ifindex %d counted %+v, %v; want nothing", in0Index+1, c, err)
	}

	// GRO on at b0: the frames arrive and the failures stop.
	mustRun(t, "ip", "netns", "exec", peer, "ethtool", "-K", "b0", "gro", "on")
	if w := checkIn(t, lb, "a0"); w != "" {
		t.Errorf("CheckVethPeer(a0) after gro on = %q, want none", w)
	}
	if before, err = m.Counts(); err != nil {
		t.Fatal(err)
	}
	rx = rxPackets(t, peer, "b0")
	send()
	d = waitCounts(t, m, before, func(d Counts) bool { return d.RedirectTxSent >= frames })
	if d.RedirectTxSent < frames || d.Lost() != 0 || d.RedirectTxErrors != 0 {
		t.Errorf("b0 with GRO on: counted %+v, want %d frames sent, none failed", d, frames)
	}
	var got uint64
	for range 150 {
		if got = rxPackets(t, peer, "b0") - rx; got >= frames {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got < frames {
		t.Errorf("b0 received %d packets, want %d", got, frames)
	}
}

func TestOpenRejects(t *testing.T) {
	tests := []struct {
		name string
		have []int
	}{
		{name: "zero ifindex", have: []int{0}},
		{name: "negative ifindex", have: []int{2, -1}},
		{name: "too many", have: make([]int, 257)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := Open(tt.have...); err == nil {
				m.Close()
				t.Fatal("Open accepted it")
			}
		})
	}
}
