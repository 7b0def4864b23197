// SPDX-License-Identifier: Apache-2.0

// Package dpcost measures what xlb's data path costs per packet (`xlb
// bench datapath`, `make bench`): for connection tables of several
// sizes, the time BPF_PROG_RUN reports for traffic not for a VIP, a new
// connection, established traffic both ways and a frame with a partial
// checksum, each as a ratio to a bare XDP_TX program run the same way.
//
// Each figure is the least of three means over Repeat runs, through the
// progbench harness, which restores the frame and writes the next flow's
// address into it before every run (a NAT must not see its own output).
// The data path runs in a progns namespace; its connection table is
// filled directly (datapath.PutConns), not by handshakes.
package dpcost
