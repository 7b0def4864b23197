// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// Port exhaustion: the data path counts each new connection it drops as
// no_lport (every local port it tried was held) for its service
// (svc_no_lport) and for the local IP whose ports ran out
// (laddr_no_lport), so that an operator sees which pool to widen.

// zeroU64 zeroes one slot of a per-CPU u64 map.
func (d *Datapath) zeroU64(m *ebpf.Map, id uint32) error {
	if err := m.Put(id, make([]uint64, d.cpus)); err != nil {
		return fmt.Errorf("zero %s[%d]: %w", m, id, err)
	}
	return nil
}

// LocalIPExhaustion returns, for each local IP the data path holds, the
// new connections dropped as no_lport because every port of it they
// tried was held.
func (d *Datapath) LocalIPExhaustion() (map[netip.Addr]uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[netip.Addr]uint64, len(d.reg.localIPs))
	for ip, l := range d.reg.localIPs {
		n, err := sumSlot(d.objs.LaddrNoLport, l.id)
		if err != nil {
			return nil, err
		}
		out[ip] = n
	}
	return out, nil
}
