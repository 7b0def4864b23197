// SPDX-License-Identifier: Apache-2.0

package txmon

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../scripts/bpf2go.sh -type txmon_counter txmon ../../bpf/txmon.bpf.c -- -I../../bpf
