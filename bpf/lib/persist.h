/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Persistence (ipvsadm -p): a persistent service sends every new
 * connection of a client prefix to the real its previous connection went
 * to, for persist_timeout seconds after that prefix's last new connection
 * (or, for a flow that lasts, after its last hold-period refresh). A real
 * that is drained (weight 0), failed its health check or left the service
 * is not reused: the connection is scheduled anew and the prefix follows
 * the new real (IPVS with expire_quiescent_template = 1).
 */
#ifndef XLB_PERSIST_H
#define XLB_PERSIST_H

#include "maps.h"
#include "parse.h"

/* persist_key_set fills k with svc's id and src cut to svc's prefix.
 * Go validated the prefix (<= 32 for IPv4, <= 128 for IPv6). */
static __always_inline void persist_key_set(struct persist_key *k,
					    const struct service *svc,
					    const struct xlb_addr *src)
{
	__u32 prefix = svc->persist_prefix;

	k->svc_id = svc->id;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 bits = prefix > 32 * i ? prefix - 32 * i : 0;
		__u32 mask = bits >= 32 ? 0xffffffff
			     : bits	? ~(0xffffffffu >> bits)
					: 0;

		k->client.w[i] = src->w[i] & bpf_htonl(mask);
	}
}

/* persist_usable tells whether a remembered real may take a new
 * connection of svc. */
static __always_inline bool persist_usable(const struct service *svc,
					   __u32 real_id)
{
	struct real *real = bpf_map_lookup_elem(&reals, &real_id);

	return real && (real->flags & XLB_REAL_F_IN_USE) &&
	       !(real->flags & (XLB_REAL_F_DOWN | XLB_REAL_F_UNRESOLVED)) &&
	       real->weight > 0 && real->svc_id == svc->id;
}

/* persist_pick returns the real remembered for the packet's client prefix,
 * or a negative value when there is none (or the service is not
 * persistent, or the entry expired, or the real is no longer usable).
 * For a persistent service it leaves the prefix's key in key, for
 * persist_remember. */
static __always_inline long persist_pick(const struct service *svc,
					 const struct xlb_tuple *t, __u32 now,
					 struct persist_key *key)
{
	struct persist_entry *e;

	if (!svc->persist_timeout)
		return -1;
	persist_key_set(key, svc, &t->src);
	e = bpf_map_lookup_elem(&persist, key);
	if (!e || (__s32)(e->expires - now) <= 0 ||
	    !persist_usable(svc, e->real_id))
		return -1;
	return e->real_id;
}

/* persist_remember records that the client prefix of key goes to
 * real_id for the next persist_timeout seconds of a persistent svc. */
static __always_inline void persist_remember(const struct service *svc,
					     const struct persist_key *key,
					     __u32 real_id, __u32 now)
{
	struct persist_entry e = {
		.real_id = real_id,
		.expires = now + svc->persist_timeout,
	};

	bpf_map_update_elem(&persist, key, &e, BPF_ANY);
}

/* persist_refresh extends the prefix's entry while a connection of it
 * lasts: called once per hold period by the established path for flows
 * marked CT_F_PERSIST, which know their service only by id. */
static __always_inline void persist_refresh(__u32 svc_id,
					    const struct xlb_tuple *t,
					    __u32 real_id, __u32 now)
{
	struct persist_key key = {};
	struct service_key *skey;
	struct persist_entry *e;
	struct service *svc;

	skey = bpf_map_lookup_elem(&svc_vips, &svc_id);
	if (!skey)
		return;
	svc = bpf_map_lookup_elem(&services, skey);
	if (!svc || svc->id != svc_id || !svc->persist_timeout)
		return;
	persist_key_set(&key, svc, &t->src);
	e = bpf_map_lookup_elem(&persist, &key);
	if (e && e->real_id != real_id)
		return; /* the prefix has moved on (its real was drained) */
	if (!e && !persist_usable(svc, real_id))
		return;
	persist_remember(svc, &key, real_id, now);
}

#endif /* XLB_PERSIST_H */
