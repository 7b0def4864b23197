// SPDX-License-Identifier: Apache-2.0

// Package apps runs real applications through a DUT of the bench lab:
// redis-benchmark against redis, wrk against nginx, iperf3, sockperf
// ping-pong and Go TCP_RR, TCP_CRR and TCP_STREAM clients and servers,
// with the servers in the reals and the clients in the client
// namespace. It parses their output into AppResults, writes their tables
// and charts, and holds the haproxy DUT (the user-space proxy a VIP often
// is).
package apps
