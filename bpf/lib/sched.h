/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Choosing a real server for a new connection. The control plane
 * precomputes each service's table (internal/sched); the data path only
 * picks an index into it:
 *   rr, wrr: a per-CPU cursor that steps through the table;
 *   lc, wlc: the same cursor, over a wrr table whose weights the control
 *            plane derives from live connection counts every period;
 *   mh:      the hash of the 5-tuple modulo the (prime) Maglev table size;
 *   sh:      the hash of the source address over the same Maglev table.
 * Drained reals (weight 0) are simply absent from the table.
 */
#ifndef XLB_SCHED_H
#define XLB_SCHED_H

#include "hash.h"
#include "maps.h"
#include "parse.h"

static __always_inline __u32 hash_src(const struct xlb_tuple *t)
{
	return jhash_3words(t->src.w[0] ^ t->src.w[3], t->src.w[1], t->src.w[2],
			    XLB_HASH_SEED);
}

static __always_inline __u32 hash_tuple(const struct xlb_tuple *t)
{
	__u32 ports = ((__u32)t->sport << 16 | t->dport) ^ t->proto;

	return jhash_3words(hash_src(t), t->dst.w[0] ^ t->dst.w[3],
			    t->dst.w[1] ^ t->dst.w[2] ^ ports, XLB_HASH_SEED);
}

/* service_lookup finds the service of a packet aimed at {vip, port,
 * proto}, or at the VIP's every-port service. */
static __always_inline struct service *service_lookup(const struct xlb_tuple *t)
{
	struct service_key key = {
		.vip = t->dst,
		.port = t->dport,
		.proto = t->proto,
		.family = t->family,
	};
	struct service *svc;

	svc = bpf_map_lookup_elem(&services, &key);
	if (svc)
		return svc;
	key.port = 0;
	return bpf_map_lookup_elem(&services, &key);
}

/* sched_pick returns the real id chosen for a new connection to svc, or
 * a negative value when the service has no schedulable real. */
static __always_inline long sched_pick(const struct service *svc,
				       const struct xlb_tuple *t)
{
	struct sched_cursor *cursor;
	__u32 zero = 0, idx, len;
	__u32 *table_len, *real_id;
	void *table;

	table = bpf_map_lookup_elem(&sched_tables, &svc->id);
	if (!table)
		return -1;
	table_len = bpf_map_lookup_elem(table, &zero);
	if (!table_len || *table_len == 0)
		return -1;
	len = *table_len;

	switch (svc->sched) {
	case XLB_SCHED_MH:
		idx = hash_tuple(t) % len;
		break;
	case XLB_SCHED_SH:
		idx = hash_src(t) % len;
		break;
	default: /* rr, wrr, lc, wlc */
		cursor = bpf_map_lookup_elem(&sched_cursors, &svc->id);
		if (!cursor)
			return -1;
		/* the table may have shrunk since the cursor last moved */
		idx = cursor->next_real % len;
		cursor->next_real = idx + 1;
		break;
	}
	idx += 1; /* slot 0 holds the length */
	real_id = bpf_map_lookup_elem(table, &idx);
	if (!real_id)
		return -1;
	return *real_id;
}

#endif /* XLB_SCHED_H */
