// SPDX-License-Identifier: Apache-2.0

// Package sched computes the scheduling tables the XDP data path reads.
//
// The data path cannot afford to run a scheduler per packet, so the control
// plane precomputes one table per service and swaps it in whole; the data
// path only indexes it, with a per-CPU cursor (rr, wrr) or a flow hash (mh,
// sh). The builders are:
//
//   - [RoundRobin]: the in-service reals once each, in the given order.
//   - [SmoothWRR]: one full cycle of nginx-style smooth weighted round
//     robin, so stepping a cursor through it yields the weighted sequence.
//   - [Maglev]: a Maglev lookup table (Eisenbud et al., NSDI 2016) with
//     weighted shares, for consistent hashing with minimal disruption.
//
// Everything here is pure Go and deterministic across runs and
// architectures: the same reals always give the same table, so a restart
// or an upgrade of the control plane does not move established flows.
// Maglev tables do not even depend on the order the reals are listed in.
package sched
