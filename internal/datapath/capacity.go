// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// CapacityError says that the maps indexed by local IP id, pinned by a
// previous run, hold another number of local IPs than the configuration
// asks for (max_local_ips). The other maps name local IPs by id, so
// changing it replaces every pinned map (Options.DropIncompatible).
type CapacityError struct {
	PinPath    string
	Have, Want uint32
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("the maps pinned in %s hold %d local IPs and the configuration asks for %d (max_local_ips): "+
		"start once with --drop-incompatible-maps to change it, which replaces every pinned map and resets every "+
		"connection, or keep max_local_ips at %d", e.PinPath, e.Have, e.Want, e.Have)
}

// setLocalIPCapacity sizes the maps indexed by local IP id for n local
// IPs, and local_addrs for them besides its VIPs.
func setLocalIPCapacity(spec *ebpf.CollectionSpec, n uint32) {
	vips := spec.Maps[xlbMapLocalAddrs].MaxEntries - spec.Maps[xlbMapLaddrs].MaxEntries
	for _, name := range localIPMaps {
		spec.Maps[name].MaxEntries = n
	}
	spec.Maps[xlbMapLocalAddrs].MaxEntries = vips + n
}

// localIPMaps are the maps indexed by local IP id.
var localIPMaps = []string{xlbMapLaddrs, xlbMapLportCursors, xlbMapLaddrNoLport}

// checkLocalIPCapacity compares the pinned laddrs map's capacity with
// spec's: another one is a *CapacityError unless drop is set (the
// layout check then replaces every pinned map, as laddrs' stamp differs).
func checkLocalIPCapacity(spec *ebpf.CollectionSpec, pinPath string, drop bool) error {
	have, err := pinnedEntries(filepath.Join(pinPath, xlbMapLaddrs))
	if err != nil {
		return err
	}
	if want := spec.Maps[xlbMapLaddrs].MaxEntries; have != 0 && have != want && !drop {
		return &CapacityError{PinPath: pinPath, Have: have, Want: want}
	}
	return nil
}
