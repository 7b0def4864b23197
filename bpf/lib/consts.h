/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Constants of the data path. Every one can be overridden at build time
 * (-DNAME=value); the Go owner reads the map sizes from the object.
 *
 * Return convention, used by every helper that can end a packet's journey:
 * a helper returns an XDP verdict (>= 0) when it has decided, or
 * XLB_CONTINUE when the caller should go on. Callers write
 *	if (ret >= 0) return ret;
 */
#ifndef XLB_CONSTS_H
#define XLB_CONSTS_H

#define XLB_CONTINUE -1

/* Not an XDP verdict but the decision to answer with an ICMP error that
 * the packet is too big (pkt->mtu says for what): the entry point builds
 * it (pmtu.h), where the stack has room for it. */
#define XLB_TOO_BIG 0x100

/* The sizes of the maps by service, real and local IP id below are the
 * defaults: the control plane sizes them at load (max_services,
 * max_reals, max_local_ips). */
#ifndef XLB_MAX_SERVICES
#define XLB_MAX_SERVICES 1024 /* services; also bounds their distinct VIPs */
#endif

#ifndef XLB_MAX_REALS
#define XLB_MAX_REALS 16384 /* reals over all services */
#endif

/* Service and real ids fit the 16 bits a connection entry keeps of each,
 * so max_services and max_reals are at most 65536. xlb_svc_timeouts has
 * an element for every possible service id, whatever the services map
 * holds (a power of two: ct_idle_past masks a service id with it). */
#define XLB_SVC_ID_LIMIT 65536

#ifndef XLB_MAX_LADDRS
#define XLB_MAX_LADDRS 4096 /* local IPs over all services */
#endif

/* Connection tables: slots per connection, as a fraction. Each connection
 * takes two entries, and the tables keep them at most 5/8 full (at that
 * load nearly every entry sits in the first 128 bytes of its probe; the
 * Go owner sizes the tables with the same fraction). */
#define XLB_CT_SLOTS_PER_CONN_NUM 16
#define XLB_CT_SLOTS_PER_CONN_DEN 5

#ifndef XLB_CT4_SLOTS
#define XLB_CT4_SLOTS 3355444 /* 1048576 IPv4 connections (even) */
#endif

#ifndef XLB_PERSIST_ENTRIES
#define XLB_PERSIST_ENTRIES 1048576 /* client prefixes of persistent services */
#endif

#ifndef XLB_CT6_SLOTS
#define XLB_CT6_SLOTS 838862 /* 262144 IPv6 connections (even) */
#endif

#ifndef XLB_CT_PROBE
/* slots a lookup reads at most from its home slot on: bounds the cost of
 * a miss and of an insert (lib/ct_table.h) */
#define XLB_CT_PROBE 16
#endif

#ifndef XLB_CT_REUSE_GRACE
/* seconds an expired forward entry is kept past its timeout before a new
 * connection may take its slot: a packet in flight on another CPU never
 * reads a slot being rewritten */
#define XLB_CT_REUSE_GRACE 2
#endif

#ifndef XLB_CT_HALF_OPEN_AGE
/* seconds a half-open TCP connection (its client has not acknowledged the
 * real's SYN-ACK) stays idle before a new connection that finds no free
 * slot may take its place: Linux conntrack's early drop of unassured
 * connections. A client retransmitting its SYN keeps its entry young. */
#define XLB_CT_HALF_OPEN_AGE 2
#endif

#ifndef XLB_SCHED_TABLE_MAX
#define XLB_SCHED_TABLE_MAX 65537 /* template size of a schedule table */
#endif

#ifndef XLB_MAX_DEVS
#define XLB_MAX_DEVS 64 /* interfaces we can redirect to */
#endif

#ifndef XLB_FIB_CACHE_ENTRIES
#define XLB_FIB_CACHE_ENTRIES 65536 /* destinations whose next hop is kept */
#endif

#ifndef XLB_LPORT_TRIES
#define XLB_LPORT_TRIES 16 /* local ports probed per new connection */
#endif

#ifndef XLB_CT_HOLD_PERIOD
/* seconds (a power of 2): a forward entry refreshes its reverse entry once
 * per period, and a reverse entry holds its local port for a period past
 * its timeout, so the port outlives the connection however the two clocks
 * drift */
#define XLB_CT_HOLD_PERIOD 16
#endif

#ifndef XLB_MAX_IPV6_EXTHDRS
#define XLB_MAX_IPV6_EXTHDRS 4 /* IPv6 extension headers skipped at most */
#endif

#ifndef XLB_DROP_RING_BYTES
#define XLB_DROP_RING_BYTES 262144 /* drop_samples ring, a power of 2 */
#endif

#ifndef XLB_DROP_SAMPLES_PER_SEC
/* dropped frames one CPU samples per second at most, while someone
 * listens: a flood of drops costs the listener, not the data path */
#define XLB_DROP_SAMPLES_PER_SEC 1000
#endif

#ifndef XLB_SYNC_RING_BYTES
#define XLB_SYNC_RING_BYTES                                                    \
	1048576 /* ct_sync_events ring (8 bytes an
				      * event, 16 with its header), a power
				      * of 2 */
#endif

#ifndef XLB_NEIGH_RING_BYTES
#define XLB_NEIGH_RING_BYTES 65536 /* neigh_requests ring, a power of 2 */
#endif

#ifndef XLB_ICMP_PER_SEC
/* ICMP errors (fragmentation needed, packet too big) one CPU sends per
 * second at most, as the kernel's icmp_msgs_per_sec */
#define XLB_ICMP_PER_SEC 1000
#endif

#ifndef XLB_ICMP4_QUOTE
/* bytes of the offending IPv4 packet an error quotes: its header and at
 * least the first 64 bytes of its payload (RFC 1812 asks for 8+) */
#define XLB_ICMP4_QUOTE 128
#endif

#ifndef XLB_ICMP6_QUOTE
#define XLB_ICMP6_QUOTE 256 /* likewise for IPv6 (bpf_csum_diff takes 512) */
#endif

#ifndef XLB_CSUM_MAX_LEN
/* longest TCP/UDP segment whose checksum the data path computes whole
 * (a frame of one page at most reaches XDP without frags) */
#define XLB_CSUM_MAX_LEN 4096
#endif

#ifndef XLB_CSUM_SEG_MAX
/* longest segment whose checksum a multi-buffer program computes whole:
 * any IP packet's */
#define XLB_CSUM_SEG_MAX 65536
#endif

#ifndef NSEC_PER_SEC
#define NSEC_PER_SEC 1000000000ULL
#endif

/* Ethertypes and protocol numbers not every libc header has. */
#define XLB_ETH_P_IP	 0x0800
#define XLB_ETH_P_IPV6	 0x86DD
#define XLB_ETH_P_8021Q	 0x8100
#define XLB_ETH_P_8021AD 0x88A8

#define XLB_IP_DF     0x4000 /* IPv4 don't-fragment flag */
#define XLB_IP_MF     0x2000 /* IPv4 more-fragments flag */
#define XLB_IP_OFFSET 0x1FFF /* IPv4 fragment offset mask */

#define XLB_ICMP_DEST_UNREACH	3
#define XLB_ICMP_FRAG_NEEDED	4 /* code of DEST_UNREACH */
#define XLB_ICMP_TIME_EXCEEDED	11
#define XLB_ICMPV6_DEST_UNREACH 1
#define XLB_ICMPV6_PKT_TOOBIG	2
#define XLB_ICMPV6_TIME_EXCEED	3

#endif /* XLB_CONSTS_H */
