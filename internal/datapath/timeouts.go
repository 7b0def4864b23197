// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The timeouts an entry expires by, as ct_idle_past reads them from
// xlb_svc_timeouts by the service id in the entry's first word: its
// service's own, else the global one of its state. The control plane
// writes the whole array whenever a timeout changes, and walks the tables
// with the same rule.

// ctTimeouts are the timeouts in force, in seconds, by enum ct_state.
type ctTimeouts struct {
	global []uint32
	own    map[uint16][]uint32 // services with timeouts of their own
}

// of is the timeout of an entry of head h; ok is false for a state no
// entry has (a slot given back).
func (c ctTimeouts) of(h ctHead) (secs uint32, ok bool) {
	if int(h.state) >= len(c.global) {
		return 0, false
	}
	if own := c.own[h.svcID]; own != nil && own[h.state] != 0 {
		return own[h.state], true
	}
	return c.global[h.state], true
}

// timeoutSecs are t's timeouts in seconds, by enum ct_state (0: none).
func timeoutSecs(t loadbalancer.StateTimeouts) []uint32 {
	out := make([]uint32, xlbCtStateCT_STATE_MAX)
	for st := range out {
		out[st] = uint32(t.Of(loadbalancer.ConnState(st)) / time.Second)
	}
	return out
}

// svcTimeoutsValue is an element of xlb_svc_timeouts.
func svcTimeoutsValue(t loadbalancer.StateTimeouts) xlbSvcTimeouts {
	var v xlbSvcTimeouts
	copy(v.Secs[:], timeoutSecs(t))
	return v
}

// timeouts are the timeouts in force.
func (d *Datapath) timeouts() ctTimeouts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.timeoutsLocked()
}

// timeoutsLocked are the timeouts in force; d.mu is held.
func (d *Datapath) timeoutsLocked() ctTimeouts {
	global := d.settings.StateTimeouts()
	c := ctTimeouts{global: timeoutSecs(global), own: map[uint16][]uint32{}}
	for _, st := range d.reg.services {
		if st.svc.Timeouts != (loadbalancer.StateTimeouts{}) {
			c.own[uint16(st.id)] = timeoutSecs(st.svc.Timeouts.Or(global))
		}
	}
	return c
}

// writeTimeouts writes xlb_svc_timeouts whole: for each service id the
// timeouts in force, the service's own with global for the states it
// has none of, and global for ids no service has; d.mu is held.
func (d *Datapath) writeTimeouts(global loadbalancer.StateTimeouts) error {
	v := d.objs.XlbSvcTimeouts
	all := make([]xlbSvcTimeouts, v.Size()/uint32(unsafe.Sizeof(xlbSvcTimeouts{})))
	def := svcTimeoutsValue(global)
	for i := range all {
		all[i] = def
	}
	for _, st := range d.reg.services {
		if int(st.id) < len(all) && st.svc.Timeouts != (loadbalancer.StateTimeouts{}) {
			all[st.id] = svcTimeoutsValue(st.svc.Timeouts.Or(global))
		}
	}
	if err := v.Set(all); err != nil {
		return fmt.Errorf("write xlb_svc_timeouts: %w", err)
	}
	return nil
}
