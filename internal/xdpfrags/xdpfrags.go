// SPDX-License-Identifier: Apache-2.0

// Package xdpfrags loads XDP programs built for multi-buffer frames
// (section xdp.frags) on any kernel: with multi-buffer support where the
// kernel has it (Linux 5.18 and later), as plain single-buffer programs
// where it does not.
//
// The programs include bpf/lib/frags.h: its constant xlb_frags tells them
// whether they may use the multi-buffer helpers. The kernel's verifier
// removes the code behind a constant 0 as dead, so an older kernel never
// sees a helper it does not know.
package xdpfrags

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Variable is the constant of bpf/lib/frags.h.
const Variable = "xlb_frags"

// supported probes once whether XDP programs may use the multi-buffer
// helpers; BPF_F_XDP_HAS_FRAGS came with them, in Linux 5.18.
var supported = sync.OnceValue(func() bool {
	return features.HaveProgramHelper(ebpf.XDP, asm.FnXdpGetBuffLen) == nil
})

// Supported tells whether this kernel runs XDP programs on frames of
// several buffers.
func Supported() bool { return supported() }

// Prepare readies spec's XDP programs for this kernel and reports whether
// they carry frames of several buffers. Where the kernel has multi-buffer
// XDP, xlb_frags is set to 1; else the programs' BPF_F_XDP_HAS_FRAGS flag
// is cleared, so that they load as plain xdp programs with xlb_frags 0.
// A spec without xlb_frags is an error: its programs would not know.
func Prepare(spec *ebpf.CollectionSpec) (bool, error) {
	return prepare(spec, Supported())
}

// Single readies spec's programs as single-buffer ones on any kernel.
func Single(spec *ebpf.CollectionSpec) error {
	_, err := prepare(spec, false)
	return err
}

func prepare(spec *ebpf.CollectionSpec, frags bool) (bool, error) {
	v, ok := spec.Variables[Variable]
	if !ok {
		return false, fmt.Errorf("multi-buffer xdp: the object has no %s (include bpf/lib/frags.h)", Variable)
	}
	if !frags {
		for _, p := range spec.Programs {
			if p.Type == ebpf.XDP {
				p.Flags &^= unix.BPF_F_XDP_HAS_FRAGS
			}
		}
		return false, v.Set(uint32(0))
	}
	if err := v.Set(uint32(1)); err != nil {
		return false, fmt.Errorf("multi-buffer xdp: set %s: %w", Variable, err)
	}
	return true, nil
}

// LoadAndAssign loads the object that load (a bpf2go loader) returns into
// objs, prepared for this kernel as Prepare does, and reports whether its
// programs carry frames of several buffers.
func LoadAndAssign(load func() (*ebpf.CollectionSpec, error), objs any) (bool, error) {
	spec, err := load()
	if err != nil {
		return false, err
	}
	frags, err := Prepare(spec)
	if err != nil {
		return false, err
	}
	return frags, spec.LoadAndAssign(objs, nil)
}
