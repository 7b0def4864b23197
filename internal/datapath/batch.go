// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Installing a schedule table replaces an element of sched_tables, an
// array of maps, and the kernel waits for an RCU grace period after every
// such update or delete (maybe_wait_bpf_programs): 8 ms each here, so a
// thousand services took seconds. A change therefore only builds its
// tables and settles them when it ends, all in one batch update (one
// grace period); within Batch, every change of fn settles together. The
// rewrites that read every service (the state timeouts, the address
// filter) are settled once the same way.
//
// Until then the maps hold the old tables: a service added in the batch
// has none yet (its packets are dropped as if it had no real) and a
// service whose reals changed keeps scheduling by its old table. So that
// an old table never names an id given to someone else, ids freed in a
// batch are held until it settles; when no other id is free, the batch
// settles early.

// pending is what the changes made since the last settle deferred.
type pending struct {
	tables     map[uint32]*ebpf.Map // service id -> its new table
	timeouts   bool                 // xlb_svc_timeouts to rewrite
	addrFilter bool                 // local_addr_filter to rewrite
}

// Batch runs fn, whose changes of the data path settle together when it
// returns (see above), whatever fn returns. Batches nest; the outermost
// settles.
func (d *Datapath) Batch(fn func() error) error {
	d.mu.Lock()
	d.batching++
	d.mu.Unlock()
	err := fn()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.batching--
	if d.batching == 0 {
		err = errors.Join(err, d.settle())
	}
	return err
}

// endChange ends a change made with d.mu held: outside a batch, what it
// deferred settles now, and a failure to settle is its error.
func (d *Datapath) endChange(err *error) {
	if d.batching > 0 {
		return
	}
	if serr := d.settle(); serr != nil {
		*err = errors.Join(*err, serr)
	}
}

// takeID takes an id of a, settling the batch first when only ids it
// freed are left. d.mu is held.
func (d *Datapath) takeID(a *idAlloc) (uint32, error) {
	if !a.hasFree() && len(a.held) > 0 {
		if err := d.settle(); err != nil {
			return 0, err
		}
	}
	return a.get()
}

// installTable defers installing table as service id's schedule table.
// d.mu is held.
func (d *Datapath) installTable(id uint32, table *ebpf.Map) {
	if d.pend.tables == nil {
		d.pend.tables = map[uint32]*ebpf.Map{}
	}
	if old, ok := d.pend.tables[id]; ok && old != d.emptyTable {
		old.Close()
	}
	d.pend.tables[id] = table
}

// clearTable defers replacing service id's schedule table with the empty
// one: the service is removed. d.mu is held.
func (d *Datapath) clearTable(id uint32) error {
	if d.emptyTable == nil {
		t, err := newSchedTable(nil)
		if err != nil {
			return err
		}
		d.emptyTable = t
	}
	d.installTable(id, d.emptyTable)
	return nil
}

// settle carries out what the changes since the last settle deferred, in
// one update of sched_tables, and frees the ids they held. d.mu is held.
func (d *Datapath) settle() error {
	var errs []error
	if d.pend.timeouts {
		errs = append(errs, d.writeTimeouts(d.settings.StateTimeouts()))
		d.pend.timeouts = false
	}
	if d.pend.addrFilter {
		errs = append(errs, d.writeAddrFilter())
		d.pend.addrFilter = false
	}
	if len(d.pend.tables) > 0 {
		ids := make([]uint32, 0, len(d.pend.tables))
		for id := range d.pend.tables {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		fds := make([]uint32, len(ids))
		for i, id := range ids {
			fds[i] = uint32(d.pend.tables[id].FD())
		}
		if _, err := d.objs.SchedTables.BatchUpdate(ids, fds, nil); err != nil {
			// one by one, as kernels without batch operations on arrays of
			// maps need
			for _, id := range ids {
				if err := d.objs.SchedTables.Put(id, d.pend.tables[id]); err != nil {
					errs = append(errs, fmt.Errorf("install schedule table of service %d: %w", id, err))
				}
			}
		}
		for _, t := range d.pend.tables {
			if t != d.emptyTable {
				t.Close()
			}
		}
		clear(d.pend.tables)
	}
	d.reg.svcIDs.release()
	d.reg.realIDs.release()
	return errors.Join(errs...)
}

// newSchedTable makes a schedule table map holding table: slot 0 its
// length, then the real ids.
func newSchedTable(table []uint32) (*ebpf.Map, error) {
	inner, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "xlb_sched_tbl",
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  4,
		MaxEntries: uint32(len(table) + 1),
		Flags:      unix.BPF_F_INNER_MAP,
	})
	if err != nil {
		return nil, fmt.Errorf("create schedule table: %w", err)
	}
	keys := make([]uint32, len(table)+1)
	vals := make([]uint32, len(table)+1)
	vals[0] = uint32(len(table))
	for i := range keys {
		keys[i] = uint32(i)
		if i > 0 {
			vals[i] = table[i-1]
		}
	}
	if _, err := inner.BatchUpdate(keys, vals, nil); err != nil {
		inner.Close()
		return nil, fmt.Errorf("fill schedule table: %w", err)
	}
	return inner, nil
}
