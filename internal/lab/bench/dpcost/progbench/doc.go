// SPDX-License-Identifier: Apache-2.0

// Package progbench measures what an XDP program costs per packet, with
// BPF_PROG_RUN in a hot loop.
//
// BPF_PROG_RUN with a repeat count runs the program again and again on the
// same buffer, so from the second run on a NAT program sees its own output.
// progbench puts a harness in front (bpf/bench/harness.bpf.c): before each
// run it restores the frame from a template, optionally writes the address
// and port of the next of many flows into it, and tail-calls the program
// under test. A baseline measured through the same harness makes the
// figures comparable as ratios.
package progbench
