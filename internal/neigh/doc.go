// SPDX-License-Identifier: Apache-2.0

// Package neigh keeps the kernel's neighbour entries resolved for the next
// hops xlb forwards to.
//
// XDP cannot resolve a neighbour: bpf_fib_lookup answers NO_NEIGH for a
// next hop the host never talked to, or whose entry the kernel garbage
// collected because only XDP used it, and the data path drops the packet.
// A Manager closes that gap the way Cilium does (pkg/datapath/neighbor):
//
//   - Sync takes the addresses the daemon forwards to (the reals), finds
//     each one's next hop and egress device (`ip route get`), adds the
//     gateways of the routes out of the attached interfaces, and keeps a
//     managed neighbour entry for each (`ip neigh replace NH dev DEV managed
//     extern_learn`, NTF_MANAGED since Linux 5.16): the kernel resolves it
//     without any traffic, keeps it fresh and never garbage-collects it.
//   - Request is the data path's on-demand ask for a next hop it dropped a
//     packet for (client-side next hops are known only this way). It is
//     cheap when repeated; an entry added on request is kept while it is
//     requested and deleted after RequestExpiry without a request.
//   - Run reconciles every Refresh (re-resolving routes catches route and
//     link changes and re-adds entries someone flushed) and early when
//     `ip monitor` reports a route or link change or a deleted neighbour.
//   - Close deletes every entry the Manager added, and only those.
//
// Entries the operator made (PERMANENT or NOARP) are never replaced nor
// deleted.
//
// # Kernels without managed entries
//
// Before Linux 5.16 the kernel refuses (or ignores) the managed flag. The
// Manager detects that once, at its first add, logs it, and falls back to
// resolving by itself: for each wanted next hop it sends one empty UDP
// datagram to port 9 (discard) from a socket bound to the egress device
// (SO_BINDTODEVICE), so the kernel resolves the neighbour as it would for
// any traffic; it repeats that at every reconcile while the next hop is
// wanted, and at every request. It adds no entry, so there is nothing to
// delete. Such entries are ordinary ones the kernel may let go stale
// between two reconciles; the data path then asks again.
//
// The package drives iproute2's ip(8) and parses its JSON output
// (`ip -j`); the parsing is done by pure functions.
package neigh
