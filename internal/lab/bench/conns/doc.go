// SPDX-License-Identifier: Apache-2.0

// Package conns holds the connection scenarios of `xlb bench`: cps (the
// highest zero-error connection rate, searched), cc (concurrent
// keepalive connections held and what the DUT keeps for them),
// throughput and latency, driven by the XDP TCP endpoints (package
// endpoint) through each DUT, followed by the real applications of
// package apps. It records the trials and writes their tables, CSV and
// charts.
package conns
