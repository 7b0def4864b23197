// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/xlb-dev/xlb/internal/baseline"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/progbench"
)

// The per-packet cost measurement (`make bench`, `xlb bench datapath`).
// Each figure is the least of three means of the kernel-reported time of
// BPF_PROG_RUN over Repeat runs, through the progbench harness, which restores the frame
// and writes the next flow's address into it before every run (a NAT
// must not see its own output). The bare XDP_TX program runs through the
// same harness in the same run, so every ratio compares like with like.

// costRounds is how many times each figure is measured; the least
// counts.
const costRounds = 3

// CostOptions configure MeasureCost.
type CostOptions struct {
	Conns  []int    // connection-table sizes (default 1k, 10k, 100k, 1M, 10M; 10M needs 2.1 GiB)
	Repeat int      // runs per figure (default 1M)
	Rows   []string // only these rows: pass, new, fwd, rev, partial (default all)
	// Namespace names the network namespace the measurement builds
	// (default xlbcost-PID); it is removed at the end.
	Namespace string
}

// CostRow is one table size's figures, in ns per packet.
type CostRow struct {
	Conns     int     `json:"conns"`
	PassNs    float64 `json:"pass_ns"`              // traffic not for a VIP
	NewNs     float64 `json:"new_ns"`               // a SYN of a connection never seen
	FwdNs     float64 `json:"established_fwd_ns"`   // client -> real, established
	FwdHoldNs float64 `json:"established_first_ns"` // the same, first packet in a 16 s hold period
	RevNs     float64 `json:"established_rev_ns"`   // real -> client
	// PartialNs is client -> real, established, for a 128-byte frame
	// whose TCP checksum is partial (a sender with checksum offload):
	// its segment is summed whole
	PartialNs float64 `json:"established_partial_csum_ns"`
	Ct4Bytes  uint64  `json:"ct4_bytes"` // the IPv4 table sized for 2 x Conns entries
}

// CostTable is the measurement: the XDP_TX baseline and a row per size.
type CostTable struct {
	TxNs      float64   `json:"xdp_tx_ns"`       // bare XDP_TX through the harness
	TxAloneNs float64   `json:"xdp_tx_alone_ns"` // and without the harness
	Repeat    int       `json:"repeat"`
	Rows      []CostRow `json:"rows"`
}

// costConn is connection i of the measurement's table: client
// 10.128.0.0+i/50000 port 10000+i%50000; local IP 10.200.0.0+i/60000 port
// 1025+i%60000 (as a deployment of 10M connections to one real would
// spread them over ~170 local IPs).
func costConn(i int) (client uint32, cport uint16, laddr uint32, lport uint16) {
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

// fillConns writes n established IPv4 TCP connections of the service
// VIP:80 -> real realID straight into the tables.
func (e *nsEnv) fillConns(n int, realID uint16) error {
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
	for i := 0; i < n; i += 60000 {
		_, _, laddr, _ := costConn(i)
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
		client, cport, laddr, lport := costConn(i)
		keys = append(keys,
			xlbCt4Key{Src: client, Dst: vip, Sport: htons(cport), Dport: htons(80), Proto: 6},
			xlbCt4Key{Src: real1, Dst: laddr, Sport: htons(80), Dport: htons(lport), Proto: 6})
		vals = append(vals,
			xlbCtEntry{LastSeen: now, State: uint8(loadbalancer.StateEstablished), RealId: realID, Port: htons(lport), Addr4: laddr},
			xlbCtEntry{LastSeen: now, State: uint8(loadbalancer.StateEstablished), Flags: 1, RealId: realID, Port: htons(cport), Addr4: client})
		if len(keys) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// tcpFrame is an untagged IPv4 TCP frame with a short payload.
func tcpFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort, syn bool) []byte {
	return tcpFrameWith(srcMAC, dstMAC, src, dst, syn, []byte("hello xlb"))
}

// partialTCPFrame is tcpFrame filling progbench.FrameLen, its checksum
// field holding the folded pseudo-header sum only, as a sender with TX
// checksum offload hands it over (CHECKSUM_PARTIAL).
func partialTCPFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort) []byte {
	b := tcpFrameWith(srcMAC, dstMAC, src, dst, false, make([]byte, progbench.FrameLen-14-20-20))
	seg := len(b) - costOffSport
	var sum uint32
	for off := costOffSrc4; off < costOffSrc4+8; off += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[off:]))
	}
	sum += 6 + uint32(seg)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[costOffTCPCsum:], uint16(sum))
	return b
}

func tcpFrameWith(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort, syn bool, payload []byte) []byte {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: 1, Window: 65535, SYN: syn, ACK: !syn}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	_ = gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}, ip, tcp, gopacket.Payload(payload))
	return buf.Bytes()
}

// Offsets in an untagged IPv4 TCP frame.
const (
	costOffSrc4  = 14 + 12
	costOffDst4  = 14 + 16
	costOffSport = 14 + 20
	costOffDport = 14 + 20 + 2
	// the TCP checksum
	costOffTCPCsum = 14 + 20 + 16
)

// costRun builds one row's harness run over the n connections of the
// table: "pass" to another destination, "fwd" client -> VIP, "partial"
// the same with a partial checksum, "rev" real -> local IP, "new" a
// client never seen before on every run.
func (e *nsEnv) costRun(n, repeat int, kind string) progbench.Run {
	flows := min(n, progbench.MaxFlows)
	stride := max(1, n/flows)
	r := progbench.Run{Repeat: repeat}
	dst := netip.AddrPortFrom(vip4, 80)
	switch kind {
	case "pass", "fwd", "partial":
		if kind == "pass" {
			dst = netip.MustParseAddrPort("10.0.3.3:80")
		}
		r.Frame = tcpFrame(clientMAC, e.clientIf.HardwareAddr, netip.AddrPortFrom(client4, 10000), dst, false)
		if kind == "partial" {
			r.Frame = partialTCPFrame(clientMAC, e.clientIf.HardwareAddr, netip.AddrPortFrom(client4, 10000), dst)
			r.PartialCsumOffset = costOffTCPCsum
		}
		r.AddrOffset, r.PortOffset = costOffSrc4, costOffSport
		for j := 0; j < flows; j++ {
			client, cport, _, _ := costConn(j * stride)
			r.Flows = append(r.Flows, progbench.Flow{Addr: addrOf(client), Port: cport})
		}
	case "rev":
		r.Frame = tcpFrame(realMAC(1), e.realIf.HardwareAddr, netip.AddrPortFrom(realAddr(false, 1), 80), netip.AddrPortFrom(laddr4, 1025), false)
		r.AddrOffset, r.PortOffset = costOffDst4, costOffDport
		for j := 0; j < flows; j++ {
			_, _, laddr, lport := costConn(j * stride)
			r.Flows = append(r.Flows, progbench.Flow{Addr: addrOf(laddr), Port: lport})
		}
	case "new":
		r.Frame = tcpFrame(clientMAC, e.clientIf.HardwareAddr, netip.AddrPortFrom(client4, 10000), dst, true)
		r.AddrOffset, r.PortOffset = costOffSrc4, costOffSport
		r.Sequential, r.SeqBase = true, netip.MustParseAddr("11.0.0.0")
	}
	return r
}

// MeasureCost measures the data path's per-packet cost for each table
// size; progress, when not nil, hears of each row.
func MeasureCost(o CostOptions, progress func(string)) (CostTable, error) {
	if len(o.Conns) == 0 {
		o.Conns = []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
	}
	if o.Repeat == 0 {
		o.Repeat = 1_000_000
	}
	if o.Namespace == "" {
		o.Namespace = fmt.Sprintf("xlbcost-%d", os.Getpid())
	}
	want := func(kind string) bool { return len(o.Rows) == 0 || strings.Contains(strings.Join(o.Rows, ","), kind) }
	table := CostTable{Repeat: o.Repeat}
	tx, err := baseline.LoadXDPTx()
	if err != nil {
		return table, err
	}
	defer tx.Close()
	h, err := progbench.Load()
	if err != nil {
		return table, err
	}
	defer h.Close()
	for _, n := range o.Conns {
		row, err := measureRow(o, n, tx, h, &table, want)
		if err != nil {
			return table, fmt.Errorf("%d connections: %w", n, err)
		}
		table.Rows = append(table.Rows, row)
		if progress != nil {
			progress(fmt.Sprintf("%d connections: established %.1f ns, new %.1f ns (XDP_TX %.1f ns)", n, row.FwdNs, row.NewNs, table.TxNs))
		}
	}
	return table, nil
}

func measureRow(o CostOptions, n int, tx *ebpf.Program, h *progbench.Harness, table *CostTable, want func(string) bool) (CostRow, error) {
	row := CostRow{Conns: n}
	e, err := newNSEnv(o.Namespace, Options{ConnEntries: uint32(2*n + 2*o.Repeat)})
	if err != nil {
		return row, err
	}
	defer e.Close()
	// the table's clients are reached through the client side
	if err := ipIn(e.ns, "route", "add", "10.128.0.0/16", "via", client4.String(), "dev", "xc"); err != nil {
		return row, err
	}
	// 10 reals and 8 local IPs: room for 5M new connections at once
	key := loadbalancer.ServiceKey{VIP: vip4, Port: 80, Proto: loadbalancer.TCP}
	var laddrs []netip.Addr
	for i := 0; i < 8; i++ {
		laddrs = append(laddrs, netip.AddrFrom4([4]byte{10, 0, 2, byte(254 - i)}))
	}
	if err := e.dp.AddService(loadbalancer.Service{Key: key, Scheduler: loadbalancer.MaglevHash, LocalIPs: laddrs}); err != nil {
		return row, err
	}
	var reals []loadbalancer.Real
	for i := 1; i <= numNSReals; i++ {
		reals = append(reals, loadbalancer.Real{Addr: realAddr(false, i), Port: 80, Weight: 1})
	}
	if err := e.dp.SetReals(key, reals); err != nil {
		return row, err
	}
	if err := e.fillConns(n, uint16(e.dp.reg.services[key].reals[0].id)); err != nil {
		return row, err
	}
	// each figure is the least of costRounds means: interference from
	// the rest of the machine only ever adds time
	measure := func(prog *ebpf.Program, r progbench.Run, rounds int) (float64, Verdict, error) {
		best := time.Duration(1<<63 - 1)
		var (
			ret uint32
			err error
		)
		for range rounds {
			var d time.Duration
			e.inNS(func() { d, ret, err = h.Measure(prog, r) })
			if err != nil {
				return 0, 0, err
			}
			best = min(best, d)
		}
		return float64(best.Nanoseconds()), Verdict(ret), nil
	}
	if table.TxNs == 0 {
		if table.TxNs, _, err = measure(tx, e.costRun(n, o.Repeat, "fwd"), costRounds); err != nil {
			return row, err
		}
		for i := range costRounds {
			e.inNS(func() {
				var d time.Duration
				_, d, err = tx.Benchmark(make([]byte, progbench.FrameLen), o.Repeat, nil)
				if ns := float64(d.Nanoseconds()); i == 0 || ns < table.TxAloneNs {
					table.TxAloneNs = ns
				}
			})
			if err != nil {
				return row, err
			}
		}
	}
	for _, m := range []struct {
		kind   string
		dst    *float64
		want   Verdict
		rounds int
	}{
		{"pass", &row.PassNs, XDPPass, costRounds},
		// first packet of each flow in this 16 s period (once: a second
		// round would find the reverse entries refreshed), then again
		{"fwd", &row.FwdHoldNs, XDPRedirect, 1},
		{"fwd", &row.FwdNs, XDPRedirect, costRounds},
		{"rev", &row.RevNs, XDPRedirect, costRounds},
		{"partial", &row.PartialNs, XDPRedirect, costRounds},
		{"new", &row.NewNs, XDPRedirect, costRounds},
	} {
		if !want(m.kind) {
			continue
		}
		ns, v, err := measure(e.dp.Program(), e.costRun(n, o.Repeat, m.kind), m.rounds)
		if err != nil {
			return row, err
		}
		if v != m.want {
			return row, fmt.Errorf("%s: verdict %s, want %s", m.kind, v, m.want)
		}
		*m.dst = ns
	}
	e.Close()
	// memory of a table sized for exactly n connections
	sized, err := Load(Options{ConnEntries: uint32(2 * n), CPUs: 1})
	if err != nil {
		return row, err
	}
	if info, err := sized.objs.Ct4.Info(); err == nil {
		row.Ct4Bytes, _ = info.Memlock()
	}
	sized.Close()
	return row, nil
}

// Markdown renders the table as docs/BENCHMARKS.md shows it.
func (t CostTable) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "bare XDP_TX through the harness: %.1f ns/packet (alone, no harness: %.1f ns)\n\n", t.TxNs, t.TxAloneNs)
	sb.WriteString("| connections | non-VIP pass | new connection | established client->real | client->real, first in 16 s | established real->client | client->real, partial checksum (128 B frame) | ct4 memory for 2n entries |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	r := func(ns float64) string { return fmt.Sprintf("%.1f ns (%.2fx)", ns, ns/t.TxNs) }
	for _, row := range t.Rows {
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %s | %s | %.1f MiB |\n", row.Conns, r(row.PassNs), r(row.NewNs), r(row.FwdNs), r(row.FwdHoldNs), r(row.RevNs), r(row.PartialNs), float64(row.Ct4Bytes)/(1<<20))
	}
	if len(t.Rows) > 2 {
		ref, last := t.Rows[1], t.Rows[len(t.Rows)-1]
		fmt.Fprintf(&sb, "\nestablished at %d vs %d connections: client->real %.2fx, real->client %.2fx\n",
			last.Conns, ref.Conns, last.FwdNs/ref.FwdNs, last.RevNs/ref.RevNs)
	}
	return sb.String()
}
