// SPDX-License-Identifier: Apache-2.0

package progbench

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../../../../scripts/bpf2go.sh -type harness_cfg -type harness_flow harness ../../../../../bpf/bench/harness.bpf.c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

// FrameLen is the length of every frame the harness replays: templates
// shorter than this are padded (after the IP packet, where the data path
// ignores bytes).
const FrameLen = 128

// MaxFlows is how many distinct flows a Run can rotate through.
const MaxFlows = 1 << 20

// Flow is the address and port the harness writes into the template.
type Flow struct {
	Addr netip.Addr // IPv4
	Port uint16
}

// Run describes one measurement.
type Run struct {
	Frame []byte // template, at most FrameLen bytes
	// Flows rotated through, written at AddrOffset and PortOffset.
	Flows                  []Flow
	AddrOffset, PortOffset int
	// Sequential writes a new address at AddrOffset on every run,
	// SeqBase, SeqBase+1, ...: every run is a flow not seen before.
	Sequential bool
	SeqBase    netip.Addr
	// PartialCsumOffset, when not 0, is where the frame's TCP/UDP
	// checksum lies, holding the folded pseudo-header sum as a sender
	// with checksum offload leaves it (CHECKSUM_PARTIAL): the harness
	// keeps it equal to that sum as it writes each flow's address.
	PartialCsumOffset int
	Repeat            int
}

// Harness is a loaded harness program.
type Harness struct {
	objs harnessObjects
}

// Load loads the harness.
func Load() (*Harness, error) {
	var h Harness
	if _, err := xdpfrags.LoadAndAssign(loadHarness, &h.objs); err != nil {
		return nil, fmt.Errorf("load harness: %w", err)
	}
	return &h, nil
}

// Close releases the harness.
func (h *Harness) Close() error { return h.objs.Close() }

func be32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.NativeEndian.Uint32(b[:])
}

// Measure runs prog r.Repeat times through the harness and returns the
// kernel-reported time per packet and the last verdict. Call it on the
// thread (network namespace, CPU) the program should see.
func (h *Harness) Measure(prog *ebpf.Program, r Run) (time.Duration, uint32, error) {
	if len(r.Frame) > FrameLen {
		return 0, 0, fmt.Errorf("frame of %d bytes: at most %d", len(r.Frame), FrameLen)
	}
	if len(r.Flows) > MaxFlows {
		return 0, 0, fmt.Errorf("%d flows: at most %d", len(r.Flows), MaxFlows)
	}
	if r.Repeat < 1 {
		return 0, 0, errors.New("repeat must be at least 1")
	}
	cfg := harnessHarnessCfg{Len: FrameLen, AddrOff: uint32(r.AddrOffset), PortOff: uint32(r.PortOffset),
		PartialOff: uint32(r.PartialCsumOffset)}
	copy(cfg.Frame[:], r.Frame)
	if r.Sequential {
		cfg.Sequential, cfg.Nflows = 1, ^uint32(0)
		cfg.SeqBase = binary.BigEndian.Uint32(r.SeqBase.AsSlice())
	} else if len(r.Flows) > 0 {
		cfg.Nflows = uint32(len(r.Flows))
		keys := make([]uint32, len(r.Flows))
		vals := make([]harnessHarnessFlow, len(r.Flows))
		for i, f := range r.Flows {
			keys[i] = uint32(i)
			vals[i] = harnessHarnessFlow{Addr: be32(f.Addr), Port: htons(f.Port)}
		}
		if _, err := h.objs.HarnessFlows.BatchUpdate(keys, vals, nil); err != nil {
			return 0, 0, fmt.Errorf("write flows: %w", err)
		}
	}
	if err := h.objs.HarnessConfig.Put(uint32(0), cfg); err != nil {
		return 0, 0, fmt.Errorf("write harness config: %w", err)
	}
	if err := h.objs.HarnessTarget.Put(uint32(0), prog); err != nil {
		return 0, 0, fmt.Errorf("install program under test: %w", err)
	}
	frame := make([]byte, FrameLen)
	copy(frame, r.Frame)
	ret, d, err := h.objs.Harness.Benchmark(frame, r.Repeat, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("BPF_PROG_RUN: %w", err)
	}
	return d, ret, nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
