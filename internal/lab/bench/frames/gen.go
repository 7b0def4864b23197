// SPDX-License-Identifier: Apache-2.0

package frames

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../../../scripts/bpf2go.sh -type fwd_next_hop fwd ../../../../bpf/bench/fwd.bpf.c
