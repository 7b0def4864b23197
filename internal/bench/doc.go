// SPDX-License-Identifier: Apache-2.0

// Package bench is the bench lab: an XDP traffic generator driven by
// BPF_PROG_RUN in live-frames mode, XDP sinks that count what arrives,
// devices under test set up side by side in the lab (xlb, a bare XDP
// forwarder, kernel forwarding, nftables DNAT), trials with exact loss,
// the RFC 2544 NDR/PDR search, and the scenarios, results and reports of
// `xlb bench`.
package bench
