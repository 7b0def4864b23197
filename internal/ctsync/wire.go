// SPDX-License-Identifier: Apache-2.0

package ctsync

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The wire format, version 1. A sender opens a TCP connection to each
// peer and writes, all integers in network byte order:
//
//	hello:  "XLBSYNC1", node id (2 bytes), name length (1), name
//	frame:  kind (1), record count (2), records
//
// A frame of kind frameConns carries connections; frameResynced (no
// records) ends the full resync a sender starts every connection with. A
// record is 16 bytes then four addresses of 4 (IPv4) or 16 (IPv6) bytes:
//
//	 0 family (4 or 6)   1 protocol   2 state   3 zero
//	 4 idle seconds (2, at most 65535)   6 zero (2)
//	 8 client port  10 VIP port  12 local port  14 real port
//	16 client, VIP, local IP, real
//
// so an IPv4 connection costs 32 bytes and an IPv6 one 80, plus 3 bytes
// per frame of up to maxRecords.
const (
	magic      = "XLBSYNC1"
	maxRecords = 256
	maxName    = 64

	frameConns    = 1
	frameResynced = 2

	recordHead = 16
)

// recordLen is the length of a record of a family's connection.
func recordLen(v6 bool) int {
	if v6 {
		return recordHead + 4*16
	}
	return recordHead + 4*4
}

// writeHello writes the hello of node id named name.
func writeHello(w io.Writer, id uint16, name string) error {
	if len(name) > maxName {
		name = name[:maxName]
	}
	b := make([]byte, 0, len(magic)+3+len(name))
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint16(b, id)
	b = append(b, byte(len(name)))
	b = append(b, name...)
	_, err := w.Write(b)
	return err
}

// readHello reads a hello: the sender's node id and name.
func readHello(r io.Reader) (uint16, string, error) {
	var head [len(magic) + 3]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, "", fmt.Errorf("read hello: %w", err)
	}
	if string(head[:len(magic)]) != magic {
		return 0, "", fmt.Errorf("hello: %q is not %q (not an xlb sync peer, or another version)", head[:len(magic)], magic)
	}
	id := binary.BigEndian.Uint16(head[len(magic):])
	name := make([]byte, head[len(magic)+2])
	if _, err := io.ReadFull(r, name); err != nil {
		return 0, "", fmt.Errorf("read hello: %w", err)
	}
	return id, string(name), nil
}

// appendFrame appends a frame of kind with conns (at most maxRecords).
func appendFrame(b []byte, kind byte, conns []datapath.SyncConn) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint16(b, uint16(len(conns)))
	for _, c := range conns {
		b = appendRecord(b, c)
	}
	return b
}

func appendRecord(b []byte, c datapath.SyncConn) []byte {
	fam := byte(4)
	if c.VIP.Addr().Is6() {
		fam = 6
	}
	idle := min(c.Idle/time.Second, 65535)
	b = append(b, fam, byte(c.Proto), byte(c.State), 0)
	b = binary.BigEndian.AppendUint16(b, uint16(idle))
	b = append(b, 0, 0)
	for _, p := range []uint16{c.Client.Port(), c.VIP.Port(), c.Local.Port(), c.Real.Port()} {
		b = binary.BigEndian.AppendUint16(b, p)
	}
	for _, a := range []netip.Addr{c.Client.Addr(), c.VIP.Addr(), c.Local.Addr(), c.Real.Addr()} {
		if fam == 4 {
			v := a.Unmap().As4()
			b = append(b, v[:]...)
		} else {
			v := a.As16()
			b = append(b, v[:]...)
		}
	}
	return b
}

// errBadRecord is a record this version cannot read.
var errBadRecord = errors.New("bad record")

// readFrame reads one frame: its kind and its connections.
func readFrame(r *bufio.Reader, conns []datapath.SyncConn) (byte, []datapath.SyncConn, error) {
	var head [3]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	kind, n := head[0], int(binary.BigEndian.Uint16(head[1:]))
	if kind != frameConns && kind != frameResynced {
		return 0, nil, fmt.Errorf("frame of kind %d: %w", kind, errBadRecord)
	}
	if n > maxRecords {
		return 0, nil, fmt.Errorf("frame of %d records, at most %d: %w", n, maxRecords, errBadRecord)
	}
	conns = conns[:0]
	var buf [recordHead + 4*16]byte
	for range n {
		if _, err := io.ReadFull(r, buf[:recordHead]); err != nil {
			return 0, nil, err
		}
		v6 := buf[0] == 6
		if buf[0] != 4 && !v6 {
			return 0, nil, fmt.Errorf("record of family %d: %w", buf[0], errBadRecord)
		}
		if _, err := io.ReadFull(r, buf[recordHead:recordLen(v6)]); err != nil {
			return 0, nil, err
		}
		c, err := decodeRecord(buf[:recordLen(v6)], v6)
		if err != nil {
			return 0, nil, err
		}
		conns = append(conns, c)
	}
	return kind, conns, nil
}

func decodeRecord(b []byte, v6 bool) (datapath.SyncConn, error) {
	proto, state := loadbalancer.Proto(b[1]), loadbalancer.ConnState(b[2])
	if proto != loadbalancer.TCP && proto != loadbalancer.UDP {
		return datapath.SyncConn{}, fmt.Errorf("record of protocol %d: %w", b[1], errBadRecord)
	}
	if state > loadbalancer.StateUDP || (state == loadbalancer.StateUDP) != (proto == loadbalancer.UDP) {
		return datapath.SyncConn{}, fmt.Errorf("record of protocol %s in state %d: %w", proto, b[2], errBadRecord)
	}
	var addrs [4]netip.Addr
	n := 4
	if v6 {
		n = 16
	}
	for i := range addrs {
		raw := b[recordHead+i*n : recordHead+(i+1)*n]
		if v6 {
			addrs[i] = netip.AddrFrom16([16]byte(raw))
		} else {
			addrs[i] = netip.AddrFrom4([4]byte(raw))
		}
	}
	port := func(off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }
	return datapath.SyncConn{
		Proto: proto, State: state,
		Idle:   time.Duration(binary.BigEndian.Uint16(b[4:])) * time.Second,
		Client: netip.AddrPortFrom(addrs[0], port(8)),
		VIP:    netip.AddrPortFrom(addrs[1], port(10)),
		Local:  netip.AddrPortFrom(addrs[2], port(12)),
		Real:   netip.AddrPortFrom(addrs[3], port(14)),
	}, nil
}
