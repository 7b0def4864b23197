/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Per-CPU counters: drops by reason, verdicts, per service and per real,
 * connection-table events. */
#ifndef XLB_STATS_H
#define XLB_STATS_H

#include "maps.h"

/* count_drop counts a drop by reason and returns XDP_DROP, so that drop
 * sites read "return count_drop(DROP_X);". While someone listens to the
 * drop recorder, it keeps the reason for drop_sample (drop_sample.h). */
static __always_inline int count_drop(enum xlb_drop_reason reason)
{
	__u32 key = reason;
	__u64 *n = bpf_map_lookup_elem(&drop_stats, &key);
	struct drop_state *st;

	if (n)
		*n += 1;
	if (xlb_drop_listeners) {
		key = 0;
		st = bpf_map_lookup_elem(&drop_states, &key);
		if (st)
			st->reason = reason;
	}
	return XDP_DROP;
}

/* count_event counts one of the data path's events (enum xlb_event). */
static __always_inline void count_event(enum xlb_event event)
{
	__u32 key = event;
	__u64 *n = bpf_map_lookup_elem(&event_stats, &key);

	if (n)
		*n += 1;
}

/* count_ct counts a connection-table event (enum xlb_ct_stat) of a
 * family; family is a constant at every call. */
static __always_inline void count_ct(const __u8 family, enum xlb_ct_stat stat)
{
	__u32 key = stat;
	__u64 *n;

	if (family == XLB_AF_INET6)
		key += XLB_CT_STAT_FAMILY_SLOTS;
	n = bpf_map_lookup_elem(&ct_stats, &key);
	if (n)
		*n += 1;
}

/* count_no_lport counts a new connection that found every port it tried
 * held, for its service and its local IP; both ids are read from map
 * values (the service entry, the local port request in ct_scratch), so
 * that counting takes no stack on new_connection's deep call chain. */
static __always_inline int count_no_lport(const __u32 *svc_id,
					  const __u32 *laddr_id)
{
	__u64 *n = bpf_map_lookup_elem(&svc_no_lport, svc_id);

	if (n)
		*n += 1;
	n = bpf_map_lookup_elem(&laddr_no_lport, laddr_id);
	if (n)
		*n += 1;
	return count_drop(DROP_NO_LPORT);
}

/* count_verdict counts the program's final verdict and returns it. */
static __always_inline int count_verdict(int verdict)
{
	__u32 key = verdict;
	__u64 *n = bpf_map_lookup_elem(&verdict_stats, &key);

	if (n)
		*n += 1;
	return verdict;
}

static __always_inline void counters_add(struct xlb_counters *c, __u32 bytes,
					 bool reply, bool new_conn)
{
	if (!c)
		return;
	if (reply) {
		c->out_packets += 1;
		c->out_bytes += bytes;
	} else {
		c->in_packets += 1;
		c->in_bytes += bytes;
	}
	if (new_conn)
		c->conns += 1;
}

/* count_traffic adds one packet to a service's and a real's counters. */
static __always_inline void count_traffic(__u32 svc_id, __u32 real_id,
					  __u32 bytes, bool reply,
					  bool new_conn)
{
	counters_add(bpf_map_lookup_elem(&svc_stats, &svc_id), bytes, reply,
		     new_conn);
	counters_add(bpf_map_lookup_elem(&real_stats, &real_id), bytes, reply,
		     new_conn);
}

#endif /* XLB_STATS_H */
