// SPDX-License-Identifier: Apache-2.0

package baseline

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../../../../scripts/bpf2go.sh xdptx ../../../../../bpf/bench/xdp_tx.bpf.c

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// LoadXDPTx loads the bare XDP_TX program: check the Ethernet header,
// swap the MACs, send the frame back out. It is the cheapest program
// that forwards a packet, the floor of per-packet cost.
func LoadXDPTx() (*ebpf.Program, error) {
	var objs xdptxObjects
	if _, err := xdpfrags.LoadAndAssign(loadXdptx, &objs); err != nil {
		return nil, fmt.Errorf("load xdp_tx baseline: %w", err)
	}
	return objs.XdpTx, nil
}
