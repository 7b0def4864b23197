// SPDX-License-Identifier: Apache-2.0

// Package sched computes the scheduling tables the XDP data path reads.
//
// The control plane precomputes a table per service (a round-robin list, a
// smooth weighted round-robin cycle, or a Maglev lookup table); the data
// path only picks an index into it, with a per-CPU cursor or a flow hash.
// Everything here is pure Go and deterministic: the same reals always give
// the same table, whatever order they are listed in.
package sched
