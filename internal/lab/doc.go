// SPDX-License-Identifier: Apache-2.0

// Package lab is the wing of xlb that measures: everything under
// internal/lab builds labs, drives traffic and benchmarks, and none of it
// ships in the data path or the daemon. It mirrors bpf/bench/ on the Go
// side.
//
//	topo       the network-namespace lab (client, lb, reals) and the demo
//	netns      run code in a network namespace; ip and sysctl there
//	progns     the namespace the data path runs in under BPF_PROG_RUN
//	xdpsend    the live-frames sender loop of the generator and the client
//	bench      `xlb bench`: core, run, frames, conns, apps, traffic,
//	           endpoint (the XDP TCP endpoints) and dpcost (BPF_PROG_RUN
//	           cost, with its progbench harness and XDP_TX baseline)
//
// The product (every other package under internal/) never imports the
// wing: only cmd/xlb (its lab and bench commands) does, and product tests
// may use its helpers (netns, progns) from _test.go files. wing_test.go
// fails CI on an import that breaks this, naming it.
package lab
