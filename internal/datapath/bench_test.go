// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/baseline"
	"github.com/xlb-dev/xlb/internal/progbench"
)

// The per-packet cost benchmark (make bench). Each figure is the mean
// kernel-reported time of BPF_PROG_RUN over benchRepeat runs, through the
// progbench harness, which restores the frame and writes the next flow's
// address into it before every run (a NAT must not see its own output).
// The bare XDP_TX program runs through the same harness in the same run,
// so every ratio compares like with like.

const benchRepeat = 1_000_000

// benchConnCounts are the table sizes measured; 10M needs about 2.1 GiB.
var benchConnCounts = []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}

// benchFlowsMax bounds the distinct flows one row rotates through.
const benchFlowsMax = progbench.MaxFlows

// fillConns writes n established IPv4 TCP connections of the service
// VIP:80 -> real 1 straight into the tables: client i is 10.128.0.0+i/50000
// port 10000+i%50000; its local IP 10.200.0.0+i/60000 port 1025+i%60000.
func fillConns(e *testEnv, n int, realID uint16) error {
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	// seen last in the previous hold period (XLB_CT_HOLD_PERIOD, 16 s):
	// the first packet of each flow refreshes its reverse entry
	now -= 16
	const batch = 8192
	keys := make([]xlbCt4Key, 0, batch)
	vals := make([]xlbCtEntry, 0, batch)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		if _, err := e.dp.objs.Ct4.BatchUpdate(keys, vals, nil); err != nil {
			return fmt.Errorf("fill ct4: %w", err)
		}
		keys, vals = keys[:0], vals[:0]
		return nil
	}
	// The table's local IPs, as a deployment of this size would have them
	// (10M connections to one real take ~170 local IPs of 60000 ports).
	for i := 0; i < n; i += 60000 {
		_, _, laddr, _ := benchConn(i)
		key := xlbServiceKey{Vip: xlbXlbAddr{W: [4]uint32{laddr}}, Family: familyV4}
		if err := e.dp.objs.LocalAddrs.Put(key, uint32(addrLaddr)); err != nil {
			return fmt.Errorf("mark local IP: %w", err)
		}
	}
	if err := e.dp.writeAddrFilter(); err != nil {
		return err
	}
	vip, real1 := toAddr(vip4).W[0], toAddr(realAddr(false, 1)).W[0]
	for i := 0; i < n; i++ {
		client, cport, laddr, lport := benchConn(i)
		keys = append(keys,
			xlbCt4Key{Src: client, Dst: vip, Sport: htons(cport), Dport: htons(80), Proto: 6},
			xlbCt4Key{Src: real1, Dst: laddr, Sport: htons(80), Dport: htons(lport), Proto: 6})
		vals = append(vals,
			xlbCtEntry{LastSeen: now, State: uint8(StateEstablished), RealId: realID, Port: htons(lport), Addr4: laddr},
			xlbCtEntry{LastSeen: now, State: uint8(StateEstablished), Flags: 1, RealId: realID, Port: htons(cport), Addr4: client})
		if len(keys) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func benchConn(i int) (client uint32, cport uint16, laddr uint32, lport uint16) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], 10<<24|128<<16+uint32(i/50000))
	client = binary.NativeEndian.Uint32(b[:])
	binary.BigEndian.PutUint32(b[:], 10<<24|200<<16+uint32(i/60000))
	laddr = binary.NativeEndian.Uint32(b[:])
	return client, uint16(10000 + i%50000), laddr, uint16(1025 + i%60000)
}

func addrOf(w uint32) netip.Addr {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], w)
	return netip.AddrFrom4(b)
}

// Offsets in an untagged IPv4 TCP frame.
const (
	offSrc4  = ethLen + 12
	offDst4  = ethLen + 16
	offSport = ethLen + ipv4Len
	offDport = ethLen + ipv4Len + 2
)

// benchRun builds one row's harness run over the n connections of the
// table: "pass" to another destination, "fwd" client -> VIP, "rev" real
// -> local IP, "new" a client never seen before on every run.
func benchRun(e *testEnv, n int, kind string) progbench.Run {
	f := families[0]
	flows := min(n, benchFlowsMax)
	stride := max(1, n/flows)
	r := progbench.Run{Repeat: benchRepeat}
	fwd := e.clientPkt(f, TCP, 10000, 80, "A")
	switch kind {
	case "pass", "fwd":
		if kind == "pass" {
			fwd.dst = netip.MustParseAddrPort("10.0.3.3:80")
		}
		r.Frame, r.AddrOffset, r.PortOffset = fwd.frame(e.t), offSrc4, offSport
		for j := 0; j < flows; j++ {
			client, cport, _, _ := benchConn(j * stride)
			r.Flows = append(r.Flows, progbench.Flow{Addr: addrOf(client), Port: cport})
		}
	case "rev":
		rev := pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: TCP, flags: "A",
			src: netip.AddrPortFrom(f.real(1), 80), dst: netip.AddrPortFrom(f.laddr, 1025)}
		r.Frame, r.AddrOffset, r.PortOffset = rev.frame(e.t), offDst4, offDport
		for j := 0; j < flows; j++ {
			_, _, laddr, lport := benchConn(j * stride)
			r.Flows = append(r.Flows, progbench.Flow{Addr: addrOf(laddr), Port: lport})
		}
	case "new":
		syn := e.clientPkt(f, TCP, 10000, 80, "S")
		r.Frame, r.AddrOffset, r.PortOffset = syn.frame(e.t), offSrc4, offSport
		r.Sequential, r.SeqBase = true, netip.MustParseAddr("11.0.0.0")
	}
	return r
}

type costRow struct {
	conns                         int
	pass, newc, fwdHold, fwd, rev float64
	memBytes                      uint64
}

// BenchmarkDatapathCost prints the per-packet cost table of
// docs/BENCHMARKS.md. Run it with `make bench`; XLB_BENCH_MAX_CONNS stops
// at a smaller table (10M needs about 2.1 GiB of memory); XLB_BENCH_ROWS
// (e.g. "fwd,rev") measures only some rows, for profiling.
func BenchmarkDatapathCost(b *testing.B) {
	maxConns := 10_000_000
	if v := os.Getenv("XLB_BENCH_MAX_CONNS"); v != "" {
		fmt.Sscan(v, &maxConns)
	}
	tx, err := baseline.LoadXDPTx()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	h, err := progbench.Load()
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()

	var rows []costRow
	var txCost, txBare float64
	for _, n := range benchConnCounts {
		if n > maxConns {
			break
		}
		e := newEnv(b, Options{ConnEntries: uint32(2*n + 2*benchRepeat)})
		// the table's clients are reached through the test client
		ipCmd(b, "-n", e.ns, "route", "add", "10.128.0.0/16", "via", client4.String(), "dev", "xc")
		// 10 reals and 8 local IPs: room for 5M new connections at once
		key := ServiceKey{VIP: vip4, Port: 80, Proto: TCP}
		var laddrs []netip.Addr
		for i := 0; i < MaxServiceLocalIPs; i++ {
			laddrs = append(laddrs, netip.AddrFrom4([4]byte{10, 0, 2, byte(254 - i)}))
		}
		if err := e.dp.AddService(Service{Key: key, Scheduler: MaglevHash, LocalIPs: laddrs}); err != nil {
			b.Fatal(err)
		}
		if err := e.dp.SetReals(key, reals(families[0], 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)); err != nil {
			b.Fatal(err)
		}
		realID := e.dp.reg.services[key].reals[0].id
		if err := fillConns(e, n, uint16(realID)); err != nil {
			b.Fatal(err)
		}
		measure := func(prog *ebpf.Program, r progbench.Run) (float64, Verdict) {
			var (
				d   time.Duration
				ret uint32
			)
			e.inNS(func() { d, ret, err = h.Measure(prog, r) })
			if err != nil {
				b.Fatal(err)
			}
			return float64(d.Nanoseconds()), Verdict(ret)
		}
		if txCost == 0 {
			txCost, _ = measure(tx, benchRun(e, n, "fwd"))
			e.inNS(func() {
				var d time.Duration
				_, d, err = tx.Benchmark(make([]byte, progbench.FrameLen), benchRepeat, nil)
				txBare = float64(d.Nanoseconds())
			})
		}
		row := costRow{conns: n}
		for _, m := range []struct {
			kind string
			dst  *float64
			want Verdict
		}{
			{"pass", &row.pass, XDPPass},
			// first packet of each flow in this 16 s period, then again
			{"fwd", &row.fwdHold, XDPRedirect},
			{"fwd", &row.fwd, XDPRedirect},
			{"rev", &row.rev, XDPRedirect},
			{"new", &row.newc, XDPRedirect},
		} {
			if rows := os.Getenv("XLB_BENCH_ROWS"); rows != "" && !strings.Contains(rows, m.kind) {
				continue // profiling one row
			}
			var v Verdict
			if *m.dst, v = measure(e.dp.Program(), benchRun(e, n, m.kind)); v != m.want {
				b.Fatalf("%d conns, %s: verdict %s, want %s", n, m.kind, v, m.want)
			}
		}
		e.dp.Close()
		// memory of a table sized for exactly n connections (the one
		// above has room for the new-connection row besides)
		sized, err := Load(Options{ConnEntries: uint32(2 * n), CPUs: 1})
		if err != nil {
			b.Fatal(err)
		}
		if info, err := sized.objs.Ct4.Info(); err == nil {
			row.memBytes, _ = info.Memlock()
		}
		sized.Close()
		rows = append(rows, row)
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "bare XDP_TX through the harness: %.1f ns/packet (alone, no harness: %.1f ns)\n\n", txCost, txBare)
	sb.WriteString("| connections | non-VIP pass | new connection | established client->real | client->real, first in 16 s | established real->client | ct4 memory for 2n entries |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	r := func(ns float64) string { return fmt.Sprintf("%.1f ns (%.2fx)", ns, ns/txCost) }
	for _, row := range rows {
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %s | %.1f MiB |\n", row.conns, r(row.pass), r(row.newc), r(row.fwd), r(row.fwdHold), r(row.rev), float64(row.memBytes)/(1<<20))
	}
	if len(rows) > 2 {
		ref, last := rows[1], rows[len(rows)-1]
		fmt.Fprintf(&sb, "\nestablished at %d vs %d connections: client->real %.2fx, real->client %.2fx\n",
			last.conns, ref.conns, last.fwd/ref.fwd, last.rev/ref.rev)
	}
	fmt.Println(sb.String())
	if out := os.Getenv("XLB_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
