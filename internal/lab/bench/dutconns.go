// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// DUTConns counts the connections in the DUT's table and the memory
// they take: xlb's connection map (two entries per connection, memory
// as the kernel accounts the map: it is preallocated, so this is the
// table's whole size) or conntrack's entries (its slab objects).
func (e *Env) DUTConns(ctx context.Context, dut DUT) (conns, mem uint64, how string, err error) {
	switch d := dut.(type) {
	case *xlbDUT:
		st, err := d.d.Client().Services(ctx)
		if err != nil {
			return 0, 0, "", err
		}
		for _, s := range st {
			for _, r := range s.Reals {
				conns += uint64(r.ActiveConns + r.InactiveConns)
			}
		}
		mem, err = d.connTableBytes(e)
		return conns, mem, "xlb ct4 map memlock (preallocated, 2 entries per connection)", err
	case *nftDUT, *nftSynproxyDUT:
		out, err := e.RunIn(e.Topo.LB(), "conntrack", "-C")
		if err != nil {
			return 0, 0, "", err
		}
		conns, _ = strconv.ParseUint(strings.TrimSpace(out), 10, 64)
		size, err := slabObjectSize("nf_conntrack")
		return conns, conns * size, "conntrack entries x nf_conntrack slab object size", err
	}
	return 0, 0, "", nil
}

// connTableBytes is the memory of the daemon's IPv4 connection map.
func (x *xlbDUT) connTableBytes(e *Env) (uint64, error) {
	_, _, pins := e.Topo.DaemonFiles()
	m, err := ebpf.LoadPinnedMap(filepath.Join(pins, "ct4"), nil)
	if err != nil {
		return 0, fmt.Errorf("xlb connection map: %w", err)
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		return 0, fmt.Errorf("xlb connection map: %w", err)
	}
	b, _ := info.Memlock()
	return b, nil
}

// slabObjectSize reads the object size of a slab cache (/proc/slabinfo).
func slabObjectSize(cache string) (uint64, error) {
	b, err := os.ReadFile("/proc/slabinfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == cache {
			return strconv.ParseUint(f[3], 10, 64)
		}
	}
	return 0, fmt.Errorf("no slab cache %s in /proc/slabinfo", cache)
}
