// SPDX-License-Identifier: Apache-2.0

// Package endpoint holds the bench lab's XDP TCP endpoints, a minimal
// stack in the manner of dperf that needs no DPDK: a stateless server
// (bpf/bench/ep_server.bpf.c) attached to each real, and a client
// (bpf/bench/ep_client.bpf.c) that opens connections at a paced rate over
// ranges of client addresses and ports, sends requests, closes, retransmits
// on timeout and counts every outcome, with handshake and request/response
// time histograms.
package endpoint
