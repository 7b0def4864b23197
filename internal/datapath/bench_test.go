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
)

// The per-packet cost benchmark (make bench). Every figure is the mean of
// what BPF_PROG_RUN reports for single runs (repeat 1) over many different
// packets: with repeat > 1 the kernel runs the program again on the frame
// the previous run rewrote, which for a NAT is another packet altogether.
// The bare XDP_TX program is measured the same way in the same run, so
// the ratios hold even though each figure includes the timer's overhead.

const benchSamples = 20000

// benchConnCounts are the table sizes measured; 10M needs about 2 GiB.
var benchConnCounts = []int{1_000, 100_000, 1_000_000, 10_000_000}

// cost runs frames[i % len] benchSamples times and returns the mean
// kernel-reported time per packet and the verdict of the last run.
func cost(e *testEnv, prog *ebpf.Program, frames [][]byte) (float64, Verdict, error) {
	var (
		total time.Duration
		ret   uint32
		err   error
	)
	e.inNS(func() {
		for i := 0; i < benchSamples && err == nil; i++ {
			var d time.Duration
			ret, d, err = prog.Benchmark(frames[i%len(frames)], 1, nil)
			total += d
		}
	})
	return float64(total) / benchSamples, Verdict(ret), err
}

// fillConns writes n established IPv4 TCP connections of the service
// VIP:80 -> real 1 straight into the tables: client i is 10.128.0.0+i/50000
// port 10000+i%50000; its local IP 10.200.0.0+i/60000 port 1025+i%60000.
func fillConns(e *testEnv, n int, realID uint16) error {
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
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

// benchFrames builds the packets of one row: count frames spread over the
// n connections in the table.
func benchFrames(e *testEnv, n, count int, kind string) [][]byte {
	f := families[0]
	out := make([][]byte, count)
	for j := range out {
		i := (j * 7919) % n // spread over the table, not its first entries
		client, cport, laddr, lport := benchConn(i)
		var p pkt
		switch kind {
		case "fwd":
			p = e.clientPkt(f, TCP, cport, 80, "A")
			p.src = netip.AddrPortFrom(addrOf(client), cport)
		case "rev":
			p = pkt{srcMAC: realMAC(1), dstMAC: e.realIf.HardwareAddr, proto: TCP, flags: "A",
				src: netip.AddrPortFrom(f.real(1), 80), dst: netip.AddrPortFrom(addrOf(laddr), lport)}
		case "new":
			p = e.clientPkt(f, TCP, uint16(1024+j%60000), 80, "S")
			p.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 99, byte(j >> 16), byte(j >> 8)}), uint16(1024+j%60000))
		case "pass":
			p = e.clientPkt(f, TCP, cport, 80, "A")
			p.dst = netip.MustParseAddrPort("10.0.3.3:80")
		}
		out[j] = p.frame(e.t)
	}
	return out
}

type costRow struct {
	conns                 int
	pass, newc, fwd, rev  float64
	memBytes              uint64
}

// BenchmarkDatapathCost prints the per-packet cost table of
// docs/BENCHMARKS.md. Run it with `make bench`; set XLB_BENCH_MAX_CONNS to
// stop at a smaller table (10M needs about 2.2 GB of memory).
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

	var rows []costRow
	var txCost float64
	for _, n := range benchConnCounts {
		if n > maxConns {
			break
		}
		e := newEnv(b, Options{ConnEntries: uint32(2*n + 2*benchSamples)})
		key := ServiceKey{VIP: vip4, Port: 80, Proto: TCP}
		e.addService(key, MaglevHash, laddr4, Real{Addr: realAddr(false, 1), Port: 80, Weight: 1})
		realID := e.dp.reg.services[key].reals[0].id
		if err := fillConns(e, n, uint16(realID)); err != nil {
			b.Fatal(err)
		}
		if txCost == 0 {
			if txCost, _, err = cost(e, tx, benchFrames(e, n, 1000, "fwd")); err != nil {
				b.Fatal(err)
			}
		}
		row := costRow{conns: n}
		for _, m := range []struct {
			kind string
			dst  *float64
			want Verdict
		}{
			{"pass", &row.pass, XDPPass},
			{"fwd", &row.fwd, XDPRedirect},
			{"rev", &row.rev, XDPRedirect},
			{"new", &row.newc, XDPRedirect},
		} {
			count := 4096
			if m.kind == "new" {
				count = benchSamples // every packet a connection not seen before
			}
			ns, v, err := cost(e, e.dp.Program(), benchFrames(e, n, count, m.kind))
			if err != nil {
				b.Fatal(err)
			}
			if v != m.want {
				b.Fatalf("%d conns, %s: verdict %s, want %s", n, m.kind, v, m.want)
			}
			*m.dst = ns
		}
		info, err := e.dp.objs.Ct4.Info()
		if err == nil {
			row.memBytes, _ = info.Memlock()
		}
		rows = append(rows, row)
		e.dp.Close()
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "bare XDP_TX: %.1f ns/packet (BPF_PROG_RUN, repeat 1, mean of %d)\n\n", txCost, benchSamples)
	sb.WriteString("| connections | non-VIP pass | new connection | established client->real | established real->client | ct4 map memory |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|\n")
	r := func(ns float64) string { return fmt.Sprintf("%.1f ns (%.2fx)", ns, ns/txCost) }
	for _, row := range rows {
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %.1f MiB |\n", row.conns, r(row.pass), r(row.newc), r(row.fwd), r(row.rev), float64(row.memBytes)/(1<<20))
	}
	if len(rows) > 1 {
		first, last := rows[0], rows[len(rows)-1]
		fmt.Fprintf(&sb, "\nestablished client->real at %d vs %d connections: %.2fx\n", last.conns, first.conns, last.fwd/first.fwd)
	}
	fmt.Println(sb.String())
	if out := os.Getenv("XLB_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
