// SPDX-License-Identifier: Apache-2.0

package endpoint

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../../../scripts/bpf2go.sh epServer ../../../../bpf/bench/ep_server.bpf.c
//go:generate ../../../../scripts/bpf2go.sh epClient ../../../../bpf/bench/ep_client.bpf.c
