/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Every map of the data path, in one place, each with its purpose. Maps the
 * control plane must find again after a restart are pinned by name (the Go
 * owner chooses the bpffs directory or disables pinning).
 */
#ifndef XLB_MAPS_H
#define XLB_MAPS_H

#include "consts.h"
#include "xlb_shared.h"

/* {vip, port, proto, family} -> service. Port 0 is the every-port entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, struct service_key);
	__type(value, struct service);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} services SEC(".maps");

/* service id -> its key, so replies can be rewritten back to VIP:vport. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct service_key);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} svc_vips SEC(".maps");

/* {address, family} -> XLB_ADDR_* flags: the VIPs and local IPs, the
 * only destinations the data path handles. Checked first, so traffic to
 * anything else costs one lookup in a small, cache-hot map. A VIP needs a
 * service, so it holds as many VIPs as services. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_MAX_SERVICES + XLB_MAX_LADDRS);
	__type(key, struct service_key); /* port, proto zero */
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} local_addrs SEC(".maps");

/* A one-hash Bloom filter of local_addrs: bit addr_filter_bit(a) is set
 * for every address there. An array lookup costs no call, so traffic that
 * is not ours leaves after a few instructions, and ours pays nothing
 * measurable. The Go owner rebuilds it from local_addrs on every change. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_ADDR_FILTER_WORDS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} local_addr_filter SEC(".maps");

/* real id -> real server. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_REALS);
	__type(key, __u32);
	__type(value, struct real);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} reals SEC(".maps");

/* local IP id -> address; FullNAT sources towards the reals. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_LADDRS);
	__type(key, __u32);
	__type(value, struct laddr);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} laddrs SEC(".maps");

/* Template of one schedule table: slot 0 holds the length n, slots 1..n
 * hold real ids. Inner maps may be of any size (BPF_F_INNER_MAP). */
struct sched_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_SCHED_TABLE_MAX + 1);
	__uint(map_flags, BPF_F_INNER_MAP);
	__type(key, __u32);
	__type(value, __u32);
};

/* service id -> its schedule table. Replacing the inner map swaps a
 * service's whole table in one update: no packet sees half of one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct sched_table);
} sched_tables SEC(".maps");

/* service id -> per-CPU cursor of rr/wrr and of local IP rotation. Per CPU
 * so that CPUs never contend for it. */
struct sched_cursor {
	__u32 next_real;
	__u32 next_laddr;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct sched_cursor);
} sched_cursors SEC(".maps");

/* local IP id -> per-CPU cursor in this CPU's slice of the port range. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_LADDRS);
	__type(key, __u32);
	__type(value, __u32);
} lport_cursors SEC(".maps");

/* {client prefix, service} -> real, for persistent services (ipvsadm -p).
 * LRU: an entry past its expiry is dead anyway; when the map is full the
 * least recently used prefix is forgotten first. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XLB_PERSIST_ENTRIES);
	__type(key, struct persist_key);
	__type(value, struct persist_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} persist SEC(".maps");

/* IPv4 connections: an open-addressed hash table of 64-byte slots, one
 * entry per direction of each connection (lib/ct_table.h). An array, so a
 * lookup is an inlined index and nothing is ever evicted; mmapable, so its
 * slots start page aligned (and the daemon can read it without copies).
 * The Go owner sizes it from the configured connections. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_CT4_SLOTS + XLB_CT_PROBE);
	__type(key, __u32);
	__type(value, struct ct4_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ct4 SEC(".maps");

/* IPv6 connections, likewise, in 128-byte slots. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_CT6_SLOTS + XLB_CT_PROBE);
	__type(key, __u32);
	__type(value, struct ct6_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ct6 SEC(".maps");

/* Per CPU: room off the stack for what the connection table's global
 * functions are handed, for callers whose frames are large: a probe
 * (struct ct_probe, ct_table.h) for ICMP errors, a local port request
 * (struct lport_req, conntrack.h) for new connections. The BPF stack of a
 * call chain is 512 bytes at most. */
struct ct_scratch {
	__u64 probe[6];
	__u64 lport[12];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ct_scratch);
} ct_scratch SEC(".maps");

/* ifindex -> device, the redirect targets (the interfaces xlb owns). */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, XLB_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

/* destination -> next hop found by bpf_fib_lookup, reused for
 * xlb_cfg.fib_cache_ttl seconds: the FIB lookup costs more than the rest of
 * the established path together. Not pinned: it refills in a second. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XLB_FIB_CACHE_ENTRIES);
	__type(key, struct fib_cache_key);
	__type(value, struct fib_cache_entry);
} fib_cache SEC(".maps");

/* real id -> next hop towards that real, the same cache without a hash
 * (the reals are few and numbered). The Go owner clears a slot when it
 * gives the id to another real. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_REALS);
	__type(key, __u32);
	__type(value, struct fib_cache_entry);
} real_nexthops SEC(".maps");

/* Next hops to resolve, for the daemon (struct neigh_request). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XLB_NEIGH_RING_BYTES);
} neigh_requests SEC(".maps");

/* Dropped frames sampled for a listener (struct drop_sample). Not
 * pinned: a listener reads its own daemon's. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XLB_DROP_RING_BYTES);
} drop_samples SEC(".maps");

/* New and changed connections, while the daemon syncs them to other
 * nodes (struct ct_sync_event). Not pinned: the next daemon resyncs. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XLB_SYNC_RING_BYTES);
} ct_sync_events SEC(".maps");

/* 1 while the daemon syncs connections; the control plane sets it. 0:
 * a new connection costs one load more than without sync. */
volatile __u32 xlb_sync_enabled = 0;

/* Per CPU, while someone listens: the reason of the last drop counted,
 * and the frames sampled in the current second. */
struct drop_state {
	__u64 second; /* bpf_ktime_get_ns() / NSEC_PER_SEC */
	__u32 sampled;
	__u32 reason; /* enum xlb_drop_reason */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct drop_state);
} drop_states SEC(".maps");

/* How many listen to drop_samples; the control plane sets it. 0: no
 * drop is sampled, and a drop costs one more load than without the
 * recorder. */
volatile __u32 xlb_drop_listeners = 0;

/* Keep types no map names in the object's BTF, for bpf2go (and so for
 * the Go side's checks against the C definitions). */
const struct neigh_request *neigh_request_type __attribute__((unused));
const struct drop_sample *drop_sample_type __attribute__((unused));
const struct ct_sync_event *ct_sync_event_type __attribute__((unused));
const enum xlb_drop_sample_consts drop_sample_consts_type
	__attribute__((unused));
const enum xlb_drop_reason drop_reason_type __attribute__((unused));
const enum xlb_event event_type __attribute__((unused));
const enum xlb_ct_stat ct_stat_type __attribute__((unused));
const enum xlb_stage stage_type __attribute__((unused));
const enum xlb_sched sched_type __attribute__((unused));
const enum ct_state ct_state_type __attribute__((unused));
const enum xlb_addr_filter_consts addr_filter_type __attribute__((unused));
const enum xlb_family family_type __attribute__((unused));
const enum xlb_addr_flags addr_flags_type __attribute__((unused));
const enum xlb_real_flags real_flags_type __attribute__((unused));
const enum xlb_svc_flags svc_flags_type __attribute__((unused));
const enum ct_hdr_state ct_hdr_state_type __attribute__((unused));
const enum ct_flags ct_flags_type __attribute__((unused));

/* Per CPU: ICMP errors the data path sent in the current second. */
struct icmp_budget {
	__u64 second; /* bpf_ktime_get_ns() / NSEC_PER_SEC */
	__u32 sent;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct icmp_budget);
} icmp_budgets SEC(".maps");

/* Counters, per CPU: per service, per real, per drop reason, per verdict. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct xlb_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} svc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_REALS);
	__type(key, __u32);
	__type(value, struct xlb_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} real_stats SEC(".maps");

/* New connections dropped as no_lport (every port tried is held), per
 * CPU: by service id, and by the id of the local IP whose ports ran out
 * (laddrs). The keys are read from map values, not the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} svc_no_lport SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_LADDRS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} laddr_no_lport SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_DROP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} drop_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_EVENT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} event_stats SEC(".maps");

/* Connection-table counters (enum xlb_ct_stat), IPv4 then IPv6. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * XLB_CT_STAT_FAMILY_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ct_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_REDIRECT + 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} verdict_stats SEC(".maps");

/* Runtime settings (local port range, next-hop cache). The Go owner
 * writes it after load. */
struct xlb_config xlb_cfg = {
	.lport_min = 1025,
	.lport_max = 65535,
	.ncpus = 1,
	.fib_cache_ttl = 1,
	.ct4_slots = XLB_CT4_SLOTS,
	.ct6_slots = XLB_CT6_SLOTS,
};

/* The state timeouts in force for each service id: its own, or the
 * global ones (also for ids no service has: entries of a removed service
 * age out by them). Every expiry check reads it through the service id
 * in an entry's first word: a global array, so that the read is an
 * index, with no branch and no map lookup whose key would take stack the
 * probes' call chain does not have. Not pinned: the owner writes all of
 * it at load and whenever a timeout changes, before it attaches a new
 * program. */
struct svc_timeouts xlb_svc_timeouts[XLB_SVC_ID_LIMIT];

#endif /* XLB_MAPS_H */
