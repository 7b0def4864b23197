// SPDX-License-Identifier: Apache-2.0

// Package datapath owns xlb's XDP program and every one of its maps.
//
// It loads the FullNAT data path (bpf/xlb.bpf.c, compiled by bpf2go),
// attaches it to interfaces, and offers a typed API over the maps:
// services, their real servers and schedule tables, local IPs, runtime
// settings, counters and the connection table. Nothing else in xlb touches
// a map directly.
//
// A service's schedule table is replaced whole, in one map update, so a
// packet never sees half of a change. Maps can be pinned under a bpffs
// directory so that a restarted daemon finds every connection again.
package datapath
