// SPDX-License-Identifier: Apache-2.0

package txmon

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Counts are the redirect outcomes counted since Open, summed over CPUs.
type Counts struct {
	// RedirectTxSent is how many redirected frames a devmap flush handed
	// to the target driver, which took them.
	RedirectTxSent uint64
	// RedirectTxFailed is how many redirected frames the target driver
	// refused at the flush: they are freed without a trace in any
	// interface counter (a veth whose peer has no XDP program and GRO
	// off, before kernel 6.3; a full peer queue).
	RedirectTxFailed uint64
	// RedirectTxErrors is how many devmap flushes failed outright (the
	// driver returned an error for the whole batch).
	RedirectTxErrors uint64
	// RedirectErrors is how many redirects failed before a frame was
	// queued: no such devmap entry, a target that takes no XDP frames (a
	// veth whose peer has no XDP program and GRO off, kernel 6.3+), a
	// frame too big for it.
	RedirectErrors uint64
}

// Lost is how many redirected frames were lost: refused by the driver at
// the flush, or refused at once. A veth whose peer has no XDP program and
// GRO off shows in RedirectErrors on kernels 6.3 and newer (the veth does
// not advertise NDO_XMIT, so the redirect fails with EOPNOTSUPP) and in
// RedirectTxFailed on older ones.
func (c Counts) Lost() uint64 { return c.RedirectTxFailed + c.RedirectErrors }

// Sub returns c minus an earlier reading o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{
		RedirectTxSent:   c.RedirectTxSent - o.RedirectTxSent,
		RedirectTxFailed: c.RedirectTxFailed - o.RedirectTxFailed,
		RedirectTxErrors: c.RedirectTxErrors - o.RedirectTxErrors,
		RedirectErrors:   c.RedirectErrors - o.RedirectErrors,
	}
}

// ErrInvalidIfindex is returned by Open for an interface index below 1.
var ErrInvalidIfindex = errors.New("invalid interface index")

// tracepoint is one xdp tracepoint the monitor attaches to.
type tracepoint struct {
	name     string
	prog     *ebpf.Program
	optional bool // missing on newer kernels
}

// Monitor counts redirect losses until it is closed.
type Monitor struct {
	objs  txmonObjects
	links []link.Link
}

// Open loads the counting programs and attaches them to the xdp
// tracepoints. With ifindexes, only frames received on those interfaces
// (of the caller's network namespace, where the redirecting XDP program
// runs) are counted; without, every XDP redirect of the host is.
func Open(ifindexes ...int) (m *Monitor, err error) {
	spec, err := loadTxmon()
	if err != nil {
		return nil, fmt.Errorf("txmon: load spec: %w", err)
	}
	if limit := int(spec.Maps[txmonMapTxmonIfindexes].MaxEntries); len(ifindexes) > limit {
		return nil, fmt.Errorf("txmon: %d interfaces, at most %d", len(ifindexes), limit)
	}
	for _, idx := range ifindexes {
		if idx < 1 {
			return nil, fmt.Errorf("txmon: ifindex %d: %w", idx, ErrInvalidIfindex)
		}
	}
	if len(ifindexes) > 0 {
		if err := spec.Variables[txmonVarTxmonFilter].Set(uint8(1)); err != nil {
			return nil, fmt.Errorf("txmon: set filter: %w", err)
		}
	}
	if err := ensureTracefs(); err != nil {
		return nil, err
	}
	m = &Monitor{}
	if err := spec.LoadAndAssign(&m.objs, nil); err != nil {
		return nil, fmt.Errorf("txmon: load: %w", err)
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	for _, idx := range ifindexes {
		if err := m.objs.TxmonIfindexes.Put(uint32(idx), uint8(1)); err != nil {
			return nil, fmt.Errorf("txmon: watch ifindex %d: %w", idx, err)
		}
	}
	for _, tp := range []tracepoint{
		{"xdp_devmap_xmit", m.objs.TxmonDevmapXmit, false},
		{"xdp_redirect_err", m.objs.TxmonRedirectErr, false},
		{"xdp_redirect_map_err", m.objs.TxmonRedirectMapErr, true},
	} {
		l, err := link.Tracepoint("xdp", tp.name, tp.prog, nil)
		if tp.optional && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("txmon: attach tracepoint xdp/%s: %w", tp.name, err)
		}
		m.links = append(m.links, l)
	}
	return m, nil
}

// Counts reads the counters, summed over CPUs.
func (m *Monitor) Counts() (Counts, error) {
	var n [txmonTxmonCounterTXMON_NR_COUNTERS]uint64
	for i := range n {
		var perCPU []uint64
		if err := m.objs.TxmonCounters.Lookup(uint32(i), &perCPU); err != nil {
			return Counts{}, fmt.Errorf("txmon: read counter %d: %w", i, err)
		}
		for _, v := range perCPU {
			n[i] += v
		}
	}
	return Counts{
		RedirectTxSent:   n[txmonTxmonCounterTXMON_TX_SENT],
		RedirectTxFailed: n[txmonTxmonCounterTXMON_TX_DROPPED],
		RedirectTxErrors: n[txmonTxmonCounterTXMON_TX_ERR_FLUSHES],
		RedirectErrors:   n[txmonTxmonCounterTXMON_REDIRECT_ERR],
	}, nil
}

// Close detaches the programs and frees the counters.
func (m *Monitor) Close() error {
	var errs []error
	for _, l := range m.links {
		errs = append(errs, l.Close())
	}
	m.links = nil
	errs = append(errs, m.objs.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("txmon: close: %w", err)
	}
	return nil
}

// ensureTracefs mounts tracefs at /sys/kernel/tracing when no tracing
// file system is reachable, as in the fresh /sys of `ip netns exec`.
func ensureTracefs() error {
	for _, p := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC) {
			return nil
		}
	}
	if err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil {
		return fmt.Errorf("txmon: mount tracefs at /sys/kernel/tracing: %w", err)
	}
	return nil
}
