// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// Kernel features the data path uses when it has them. Each is probed
// once and handed to the program as a constant of its .rodata, so that
// the verifier drops the code of a feature the kernel lacks as dead; the
// control plane then refuses what needs it, with a clear error.

// ErrKernelFeature is what a configuration needing a feature the running
// kernel lacks is refused with.
var ErrKernelFeature = errors.New("the running kernel lacks a feature this needs")

// haveXDPBytes tells whether XDP programs may call bpf_xdp_load_bytes and
// bpf_xdp_store_bytes (Linux 5.18): the TCP option walk of the client
// address features (bpf/lib/tcp_edit.h) reads options with them.
var haveXDPBytes = sync.OnceValue(func() bool {
	return features.HaveProgramHelper(ebpf.XDP, asm.FnXdpLoadBytes) == nil &&
		features.HaveProgramHelper(ebpf.XDP, asm.FnXdpStoreBytes) == nil
})

// setKernelFeatures writes what the kernel has into spec's constants.
func setKernelFeatures(spec *ebpf.CollectionSpec) error {
	if !haveXDPBytes() {
		return nil
	}
	if err := spec.Variables[xlbVarXlbXdpBytes].Set(uint32(1)); err != nil {
		return fmt.Errorf("set %s: %w", xlbVarXlbXdpBytes, err)
	}
	return nil
}

// checkClientAddress tells whether the kernel can carry a service's
// client address (TOA or PROXY v2).
func checkClientAddress() error {
	if !haveXDPBytes() {
		return fmt.Errorf("client_address: %w: bpf_xdp_load_bytes (Linux 5.18)", ErrKernelFeature)
	}
	return nil
}
