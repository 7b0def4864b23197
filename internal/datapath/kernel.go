// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
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

// haveSyncookies tells whether XDP programs may call the raw SYN cookie
// helpers (Linux 6.0), which the SYN proxy (bpf/lib/synproxy.h) needs.
var haveSyncookies = sync.OnceValue(func() bool {
	return haveXDPBytes() &&
		features.HaveProgramHelper(ebpf.XDP, asm.FnTcpRawGenSyncookieIpv4) == nil &&
		features.HaveProgramHelper(ebpf.XDP, asm.FnTcpRawCheckSyncookieIpv4) == nil
})

// setKernelFeatures writes what the kernel has into spec's constants.
func setKernelFeatures(spec *ebpf.CollectionSpec) error {
	for _, f := range []struct {
		name string
		have func() bool
	}{
		{xlbVarXlbXdpBytes, haveXDPBytes},
		{xlbVarXlbSyncookies, haveSyncookies},
	} {
		if !f.have() {
			continue
		}
		if err := spec.Variables[f.name].Set(uint32(1)); err != nil {
			return fmt.Errorf("set %s: %w", f.name, err)
		}
	}
	return nil
}

// checkSynProxy tells whether the kernel can run a service's SYN proxy.
func checkSynProxy() error {
	if !haveSyncookies() {
		return fmt.Errorf("syn_proxy: %w: bpf_tcp_raw_gen_syncookie_ipv4 (Linux 6.0)", ErrKernelFeature)
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

// CheckKernel tells whether the running kernel can run a service: its
// client address way and its SYN proxy need helpers probed here.
func CheckKernel(s loadbalancer.Service) error {
	if s.ClientAddress != loadbalancer.ClientAddressNone {
		if err := checkClientAddress(); err != nil {
			return err
		}
	}
	if s.SynProxy {
		return checkSynProxy()
	}
	return nil
}

// CheckTablesFit tells whether connection tables of these sizes fit in
// the memory the machine has available (MemAvailable), as a start would
// check before creating them; a *MemoryError when they do not.
func CheckTablesFit(sizes loadbalancer.ConnTableSizes) error {
	tables := []ConnTableSize{
		{Family: "IPv4", Conns: sizes.IPv4, Bytes: ConnTableBytes(false, sizes.IPv4)},
		{Family: "IPv6", Conns: sizes.IPv6, Bytes: ConnTableBytes(true, sizes.IPv6)},
	}
	avail, err := MemAvailable()
	if err != nil {
		return err
	}
	if tables[0].Bytes+tables[1].Bytes > avail {
		return &MemoryError{Tables: tables, Available: avail}
	}
	return nil
}
