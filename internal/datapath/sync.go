// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// SyncConn is a connection as the nodes of a cluster sync it: by the
// addresses and ports every node names alike, not by the ids each node's
// data path gives its services and reals.
type SyncConn struct {
	Proto loadbalancer.Proto
	State loadbalancer.ConnState
	// Client is the client; VIP the service's address and port it
	// connected to.
	Client, VIP netip.AddrPort
	// Local is the owner's local IP and port towards Real.
	Local, Real netip.AddrPort
	// Idle is how long ago the owner last saw a packet of it.
	Idle time.Duration
}

// unsyncable are the flags of connections that do not move between nodes:
// a SYN-proxied one (its sequence offset is the owner's) and those whose
// reals get the client's address in TOA or a PROXY header (their state is
// the owner's).
var unsyncable = ctFSynProxy | ctFTOA | ctFProxy

// SetSync turns the data path's sync events on or off: on, every new
// connection and every state change of a connection's forward entry is
// queued for WatchSyncEvents.
func (d *Datapath) SetSync(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := d.objs.XlbSyncEnabled.Set(v); err != nil {
		return fmt.Errorf("set xlb_sync_enabled: %w", err)
	}
	return nil
}

// WatchSyncEvents calls fn for every connection of this node the data
// path reports new or changed state, until ctx is done. One watcher at a
// time: the ring has one reader.
func (d *Datapath) WatchSyncEvents(ctx context.Context, fn func(SyncConn)) error {
	var ev xlbCtSyncEvent
	// the timeouts are read again once a second, not per event: they
	// take d.mu, which an install or an apply holds
	var timeouts ctTimeouts
	var read time.Time
	return readRing(ctx, d.objs.CtSyncEvents, func(raw []byte) error {
		if _, err := binary.Decode(raw, binary.NativeEndian, &ev); err != nil {
			return fmt.Errorf("decode sync event: %w", err)
		}
		t := d.ct[0]
		if ev.Family == familyV6 {
			t = d.ct[1]
		}
		now, err := monotonicSeconds()
		if err != nil {
			return err
		}
		if time.Since(read) > time.Second {
			timeouts, read = d.timeouts(), time.Now()
		}
		if ev.Slot < t.len() {
			if c, ok := t.syncConnOf(ev.Slot, now, timeouts); ok {
				fn(c)
			}
		}
		return nil
	})
}

// SyncConns calls fn for every live connection this node owns whose
// owner saw a packet within active (every one with active 0); fn
// returning false stops the walk. Connections synced from other nodes,
// and those that do not move (see SyncConn), are left out.
func (d *Datapath) SyncConns(active time.Duration, fn func(SyncConn) bool) error {
	now, err := monotonicSeconds()
	if err != nil {
		return err
	}
	timeouts := d.timeouts()
	for _, t := range d.ct {
		for i := range t.len() {
			h := t.head(i)
			if !h.isEntry() || h.flags&ctFReverse != 0 || (active > 0 && time.Duration(now-h.lastSeen)*time.Second > active) {
				continue
			}
			if c, ok := t.syncConnOf(i, now, timeouts); ok && !fn(c) {
				return nil
			}
		}
	}
	return nil
}

// owner is the node that made the entry in slot i (0: this one).
func (t *ctTable) owner(i uint32) uint16 {
	if t.v6 {
		return t.slot6(i).Ext.OwnerNode
	}
	return t.slot4(i).Ext.OwnerNode
}

// syncConnOf reads the connection whose forward entry is in slot i, if
// it is live, this node's, and moves. The real's address and port are
// its reverse entry's key.
func (t *ctTable) syncConnOf(i, now uint32, timeouts ctTimeouts) (SyncConn, bool) {
	h := t.head(i)
	if !h.isEntry() || h.flags&ctFReverse != 0 || h.flags&unsyncable != 0 || t.expired(h, now, timeouts, 0) || t.owner(i) != 0 {
		return SyncConn{}, false
	}
	c := t.entryOf(i, h, now)
	peer := t.entry(i).Peer
	if peer >= t.len() || t.head(peer).flags&ctFReverse == 0 {
		return SyncConn{}, false
	}
	var real netip.AddrPort
	var local netip.AddrPort
	if t.v6 {
		k := t.slot6(peer).Key
		real = netip.AddrPortFrom(fromAddr(k.Src, familyV6), ntohs(k.Sport))
		local = netip.AddrPortFrom(fromAddr(k.Dst, familyV6), ntohs(k.Dport))
	} else {
		k := t.slot4(peer).Key
		real = netip.AddrPortFrom(fromAddr([4]uint32{k.Src}, familyV4), ntohs(k.Sport))
		local = netip.AddrPortFrom(fromAddr([4]uint32{k.Dst}, familyV4), ntohs(k.Dport))
	}
	if local != c.Peer {
		return SyncConn{}, false // the reverse slot was taken meanwhile
	}
	return SyncConn{Proto: c.Proto, State: c.State, Client: c.From, VIP: c.To, Local: local, Real: real, Idle: c.Idle}, true
}

// SyncStats count what InstallSynced did with the connections it was
// given.
type SyncStats struct {
	Installed uint64 // new entries
	Refreshed uint64 // entries there already, brought up to date
	// Own: this node has a connection of its own with the same client
	// and VIP, as recent; it is kept.
	Own uint64
	// Stale: the record is of an older connection than the one here.
	Stale uint64
	// NoService and NoReal: this node has no such service or real (the
	// nodes' configurations differ).
	NoService, NoReal uint64
	// Full: no room in the connection table (or the local port's pair
	// holds another connection).
	Full uint64
}

// Add adds o's counts to s.
func (s *SyncStats) Add(o SyncStats) {
	s.Installed += o.Installed
	s.Refreshed += o.Refreshed
	s.Own += o.Own
	s.Stale += o.Stale
	s.NoService += o.NoService
	s.NoReal += o.NoReal
	s.Full += o.Full
}

// InstallSynced writes connections node owner (1 to 65535) synced to
// this one: both entries of each, as the owner holds them, so that a
// packet of one that reaches this node is forwarded as the owner
// forwards it (from the owner's local IP and port) and, once this node
// takes the owner's local IPs over, so are its replies. A connection
// already here is brought up to date (state, last seen).
func (d *Datapath) InstallSynced(owner uint16, conns []SyncConn) (SyncStats, error) {
	var st SyncStats
	if owner == 0 {
		return st, errors.New("install synced connections: owner 0 is this node")
	}
	now, err := monotonicSeconds()
	if err != nil {
		return st, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	timeouts := d.timeoutsLocked()
	inserts := uint64(0)
	for _, c := range conns {
		svcID, realID, ok := d.syncIDs(c, &st)
		if !ok {
			continue
		}
		t := d.ct[0]
		if c.VIP.Addr().Is6() {
			t = d.ct[1]
		}
		seen := now - uint32(min(c.Idle/time.Second, time.Duration(now)))
		switch t.installSynced(c, svcID, realID, owner, now, seen, timeouts) {
		case installNew:
			st.Installed++
			inserts += 2
		case installRefreshed:
			st.Refreshed++
		case installOwn:
			st.Own++
		case installStale:
			st.Stale++
		case installFull:
			st.Full++
		}
	}
	if inserts > 0 {
		_ = d.countControlPlane(0, xlbXlbCtStatCT_STAT_CP_INSERTS, inserts)
	}
	return st, nil
}

// syncIDs finds the ids of c's service and real on this node; d.mu is
// held. A port-0 service takes the VIP's ports that have none of their
// own, as in the data path.
func (d *Datapath) syncIDs(c SyncConn, st *SyncStats) (svcID uint16, realID uint16, ok bool) {
	key := loadbalancer.ServiceKey{VIP: c.VIP.Addr(), Port: c.VIP.Port(), Proto: c.Proto}
	s, found := d.reg.services[key]
	if !found {
		key.Port = 0
		s, found = d.reg.services[key]
	}
	if !found {
		st.NoService++
		return 0, 0, false
	}
	for _, r := range s.reals {
		if r.real.Addr == c.Real.Addr() && (r.real.Port == c.Real.Port() || r.real.Port == 0) {
			return uint16(s.id), uint16(r.id), true
		}
	}
	st.NoReal++
	return 0, 0, false
}

type installResult int

const (
	installNew installResult = iota
	installRefreshed
	installOwn
	installStale
	installFull
)

// installSynced writes or refreshes the entries of c in t.
func (t *ctTable) installSynced(c SyncConn, svcID, realID, owner uint16, now, seen uint32, timeouts ctTimeouts) installResult {
	client, vip := toAddr(c.Client.Addr()).W, toAddr(c.VIP.Addr()).W
	local, real := toAddr(c.Local.Addr()).W, toAddr(c.Real.Addr()).W
	proto := uint8(c.Proto)
	var fwdKey, revKey ctKey
	if t.v6 {
		fwdKey.v6 = xlbCt6Key{Src: client, Dst: vip, Sport: htons(c.Client.Port()), Dport: htons(c.VIP.Port()), Proto: proto}
		revKey.v6 = xlbCt6Key{Src: real, Dst: local, Sport: htons(c.Real.Port()), Dport: htons(c.Local.Port()), Proto: proto}
	} else {
		fwdKey.v4 = xlbCt4Key{Src: client[0], Dst: vip[0], Sport: htons(c.Client.Port()), Dport: htons(c.VIP.Port()), Proto: proto}
		revKey.v4 = xlbCt4Key{Src: real[0], Dst: local[0], Sport: htons(c.Real.Port()), Dport: htons(c.Local.Port()), Proto: proto}
	}
	fwdSlot, live, free, hasFree := t.find(fwdKey, now, timeouts, ctProbe)
	if live {
		h, e := t.head(fwdSlot), t.entry(fwdSlot)
		same := e.RealId == realID && e.Port == htons(c.Local.Port()) && t.addr(fwdSlot) == local &&
			e.Peer < t.len() && t.holds(e.Peer, revKey)
		mine := t.owner(fwdSlot) == 0
		switch {
		case same && !mine:
			t.refresh(fwdSlot, uint8(c.State), seen)
			t.refresh(e.Peer, uint8(c.State), seen)
			return installRefreshed
		case seen <= h.lastSeen && !reopens(h.state, uint8(c.State)):
			// what is here is as recent: this node's own connection of
			// the same client and VIP, or an older one's record
			if mine {
				return installOwn
			}
			return installStale
		}
		// a later connection of the same client and VIP (the client
		// reused its port) replaces the one here
		if !t.kill(fwdSlot, h.word()) {
			return installFull
		}
		t.giveBackReverse(e.Peer, fwdSlot)
		if fwdSlot, live, free, hasFree = t.find(fwdKey, now, timeouts, ctProbe); live {
			return installFull
		}
	}
	if !hasFree || !t.claim(free, now, timeouts) {
		return installFull
	}
	fwdSlot = free
	rev := xlbCtEntry{LastSeen: seen, State: uint8(c.State), Flags: ctFReverse, SvcId: svcID, RealId: realID,
		Port: htons(c.Client.Port()), Peer: fwdSlot}
	revSlot, err := t.insertOwned(revKey, rev, client, now, timeouts, owner)
	if err != nil {
		t.release(fwdSlot)
		return installFull
	}
	fwd := xlbCtEntry{LastSeen: seen, State: uint8(c.State), SvcId: svcID, RealId: realID, Port: htons(c.Local.Port()), Peer: revSlot}
	t.publishOwned(fwdSlot, fwdKey, fwd, local, owner)
	return installNew
}

// reopens tells a record of a connection being opened (or open) over an
// entry here that is closing or closed: the client reused its port for a
// new connection, as ct_reopens tells in the data path, maybe within the
// same second as the last packet of the old one.
func reopens(here, record uint8) bool {
	closing := func(st uint8) bool {
		s := loadbalancer.ConnState(st)
		return s == loadbalancer.StateFin || s == loadbalancer.StateClose
	}
	return closing(here) && !closing(record) && loadbalancer.ConnState(record) != loadbalancer.StateUDP
}

// refresh brings slot i's entry up to a record last seen at seen, in
// state, unless a CPU writes it meanwhile: the last seen moves only
// later, and a TCP state only on (established, closing, closed), so a
// record older than what this node saw (a refresh sent before the flow
// moved here and closed) takes nothing back.
func (t *ctTable) refresh(i uint32, state uint8, seen uint32) {
	old := atomic.LoadUint64(t.headWord(i))
	h := headOf(old)
	if h.flags&ctFBusy != 0 || seen < h.lastSeen {
		return
	}
	h.lastSeen = seen
	if state > h.state && loadbalancer.ConnState(state) != loadbalancer.StateUDP {
		h.state = state
	}
	atomic.CompareAndSwapUint64(t.headWord(i), old, h.word())
}

// addr is the address slot i's entry keeps: a forward entry's local IP.
func (t *ctTable) addr(i uint32) [4]uint32 {
	if t.v6 {
		return t.slot6(i).Addr6
	}
	return [4]uint32{t.slot4(i).Addr4}
}

// giveBackReverse gives back the reverse entry in slot rev if it still
// is the one of the forward entry in slot fwd, as ct_give_back_reverse.
func (t *ctTable) giveBackReverse(rev, fwd uint32) {
	if rev >= t.len() {
		return
	}
	old := atomic.LoadUint64(t.headWord(rev))
	h := headOf(old)
	if h.flags&(ctFUsed|ctFBusy|ctFReverse) == ctFUsed|ctFReverse && t.entry(rev).Peer == fwd {
		t.kill(rev, old)
	}
}

// SetPeerLocalIPs makes addrs, the local IPs of the other nodes of a
// cluster, addresses the data path answers for as its own local IPs (no
// service uses them for new connections): the replies of their
// connections synced here, which reach this node once it announces a
// dead node's local IPs, find their entries. Addresses of the previous
// call that addrs leaves out stop being local (unless a service here has
// them).
func (d *Datapath) SetPeerLocalIPs(addrs []netip.Addr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := map[netip.Addr]bool{}
	for _, a := range addrs {
		want[a.Unmap()] = true
	}
	var changed []netip.Addr
	for a := range want {
		if !d.peerLocalIPs[a] {
			changed = append(changed, a)
		}
	}
	for a := range d.peerLocalIPs {
		if !want[a] {
			changed = append(changed, a)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	d.peerLocalIPs = want
	if err := d.syncLocalAddrs(changed...); err != nil {
		return fmt.Errorf("peer local IPs: %w", err)
	}
	if err := d.writeAddrFilter(); err != nil {
		return fmt.Errorf("peer local IPs: %w", err)
	}
	d.pend.addrFilter = false
	return nil
}
