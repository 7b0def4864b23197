// SPDX-License-Identifier: Apache-2.0

package baseline

//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" xdptx ../../bpf/bench/xdp_tx.bpf.c

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// LoadXDPTx loads the bare XDP_TX program: check the Ethernet header,
// swap the MACs, send the frame back out. It is the cheapest program
// that forwards a packet, the floor of per-packet cost.
func LoadXDPTx() (*ebpf.Program, error) {
	var objs xdptxObjects
	if err := loadXdptxObjects(&objs, nil); err != nil {
		return nil, fmt.Errorf("load xdp_tx baseline: %w", err)
	}
	return objs.XdpTx, nil
}
