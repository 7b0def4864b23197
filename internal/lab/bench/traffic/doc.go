// SPDX-License-Identifier: Apache-2.0

// Package traffic is the bench's frame machinery: an XDP traffic
// generator driven by BPF_PROG_RUN in live-frames mode (one paced sender
// per CPU, flows varied per VSPERF: MACs, addresses or ports), the frame
// templates it sends (UDP, TCP SYN, TCP ACK over IPv4 or IPv6, 64 bytes
// to jumbo) and XDP sinks that count exactly what arrives.
// bpf/bench/gen.bpf.c and sink.bpf.c are compiled here by bpf2go.
package traffic
