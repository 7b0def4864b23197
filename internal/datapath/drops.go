// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// DropSample is a frame the data path dropped, sampled while someone
// listens (WatchDrops): its reason, where it came in, and its first
// bytes (bpf/lib/drop_sample.h).
type DropSample struct {
	At      time.Time
	Ifindex int
	CPU     int
	Reason  DropReason
	Len     int    // the frame's length
	Data    []byte // its first bytes (up to 128)
}

// DropSampleBytes is how many of a frame's first bytes a sample keeps.
const DropSampleBytes = int(xlbXlbDropSampleConstsXLB_DROP_SAMPLE_BYTES)

// decodeDropSample reads one drop_samples record; boot is the wall time
// of the monotonic clock's zero.
func decodeDropSample(raw []byte, boot time.Time) (DropSample, error) {
	var rec xlbDropSample
	if len(raw) < binary.Size(rec) {
		return DropSample{}, fmt.Errorf("drop sample of %d bytes, want %d", len(raw), binary.Size(rec))
	}
	if _, err := binary.Decode(raw, binary.NativeEndian, &rec); err != nil {
		return DropSample{}, fmt.Errorf("decode drop sample: %w", err)
	}
	n := min(int(rec.Caplen), len(rec.Data))
	return DropSample{At: boot.Add(time.Duration(rec.Ns)), Ifindex: int(rec.Ifindex), CPU: int(rec.Cpu),
		Reason: DropReason(rec.Reason), Len: int(rec.Len), Data: append([]byte(nil), rec.Data[:n]...)}, nil
}

// monotonicZero is the wall time at which CLOCK_MONOTONIC (the clock of
// bpf_ktime_get_ns) read zero.
func monotonicZero() time.Time {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return now
	}
	return now.Add(-time.Duration(ts.Nano()))
}

// WatchDrops turns the drop recorder on and calls fn for every sampled
// drop until ctx is done; then it turns the recorder off. One watcher at
// a time: the ring has one reader (the daemon fans samples out).
func (d *Datapath) WatchDrops(ctx context.Context, fn func(DropSample)) error {
	if err := d.SetDropRecorder(true); err != nil {
		return err
	}
	defer func() { _ = d.SetDropRecorder(false) }()
	boot := monotonicZero()
	return readRing(ctx, d.objs.DropSamples, func(raw []byte) error {
		s, err := decodeDropSample(raw, boot)
		if err == nil {
			fn(s)
		}
		return err
	})
}

// SetDropRecorder turns the drop recorder on or off: on, dropped frames
// are sampled into the ring WatchDrops reads (xlb bench datapath turns it
// on without a reader, to measure what it costs).
func (d *Datapath) SetDropRecorder(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := d.objs.XlbDropListeners.Set(v); err != nil {
		return fmt.Errorf("turn the drop recorder on (%v): %w", on, err)
	}
	return nil
}

// Headers are what a sample's first bytes say of the packet: its
// addresses and ports (TCP and UDP), or as much as they hold.
type Headers struct {
	Proto    string // tcp, udp, icmp, icmpv6, or the IP protocol number
	Src, Dst netip.AddrPort
	VLAN     int // 0 without a tag
}

// ParseHeaders reads the Ethernet (with one 802.1Q tag at most), IPv4 or
// IPv6 and TCP or UDP headers of data. ok is false when data holds no IP
// header (a sample of a truncated frame, or not IP).
func ParseHeaders(data []byte) (h Headers, ok bool) {
	if len(data) < 14 {
		return h, false
	}
	etype, off := binary.BigEndian.Uint16(data[12:14]), 14
	if etype == 0x8100 && len(data) >= 18 {
		h.VLAN = int(binary.BigEndian.Uint16(data[14:16]) & 0xfff)
		etype, off = binary.BigEndian.Uint16(data[16:18]), 18
	}
	var proto byte
	var l4 int
	switch etype {
	case 0x0800:
		if len(data) < off+20 {
			return h, false
		}
		ihl := int(data[off]&0xf) * 4
		proto, l4 = data[off+9], off+ihl
		h.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(data[off+12:off+16])), 0)
		h.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(data[off+16:off+20])), 0)
	case 0x86dd:
		if len(data) < off+40 {
			return h, false
		}
		proto, l4 = data[off+6], off+40
		h.Src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(data[off+8:off+24])), 0)
		h.Dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(data[off+24:off+40])), 0)
	default:
		return h, false
	}
	h.Proto = map[byte]string{6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6"}[proto]
	if h.Proto == "" {
		h.Proto = fmt.Sprint(proto)
	}
	if (proto == 6 || proto == 17) && len(data) >= l4+4 {
		h.Src = netip.AddrPortFrom(h.Src.Addr(), binary.BigEndian.Uint16(data[l4:l4+2]))
		h.Dst = netip.AddrPortFrom(h.Dst.Addr(), binary.BigEndian.Uint16(data[l4+2:l4+4]))
	}
	return h, true
}
