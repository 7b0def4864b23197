// SPDX-License-Identifier: Apache-2.0

// Package bench is the core of `xlb bench`, shared by its scenarios: the
// lab a run uses (Env: the namespaces, the generator and sinks of package
// traffic, the direct link), the devices under test that frame and
// connection scenarios share (xlb, kernel forwarding, nftables DNAT, a
// sink, no balancer at all) behind the DUT interface, a run's Options,
// trial bookkeeping (pacing tolerance, DUT drop counters, progress lines),
// the RFC 2544 binary search the frame and connection searches share, the
// chart helper, and where a run happened (Machine).
//
// The scenarios live in packages of their own: frames (pps, frame-sizes,
// rfc2544, multiflow), conns (cps, cc, throughput, latency with the XDP
// TCP endpoints), apps (redis, http, iperf3, sockperf, the Go TCP_RR,
// TCP_CRR and TCP_STREAM runners, haproxy); run dispatches a scenario
// and holds its results, report, CSV and charts.
package bench
