// SPDX-License-Identifier: Apache-2.0

package datapath

// scripts/bpf2go.sh holds the compiler and flags every BPF object shares.
//go:generate ../../scripts/bpf2go.sh -type xlb_addr -type service_key -type service -type real -type laddr -type ct4_key -type ct6_key -type ct_entry -type ct4_slot -type ct6_slot -type xlb_counters -type fib_cache_key -type fib_cache_entry -type neigh_request -type drop_sample -type ct_sync_event -type steer_set xlb ../../bpf/xlb.bpf.c -- -I../../bpf -mcpu=v3
