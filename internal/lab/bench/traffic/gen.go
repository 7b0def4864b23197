// SPDX-License-Identifier: Apache-2.0

package traffic

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../../../scripts/bpf2go.sh gen ../../../../bpf/bench/gen.bpf.c
//go:generate ../../../../scripts/bpf2go.sh -type sink_latency -type sink_config sink ../../../../bpf/bench/sink.bpf.c
