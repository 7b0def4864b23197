/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection tables: open addressing in an array map, one per family.
 *
 * A key's home is a slot given by its hash: hash * (slots / 2) >> 32,
 * times two, so that homes are even and a home and the slot after it are
 * one 128-byte pair (the pair an adjacent-line prefetcher brings in
 * together). A lookup reads slots home, home + 1, ... and stops at the
 * key's live entry, at a slot never used, or after XLB_CT_PROBE slots. An
 * insert takes the first free slot on that path: never used, or expired
 * (plus a grace). So an entry is always at most XLB_CT_PROBE - 1 slots
 * past its home, every slot between its home and it is used, and a slot
 * never used ends every probe that reaches it. Entries are not moved or
 * deleted by the data path: an expired one is a free slot for the next
 * insert that passes it, and nothing scans the table.
 *
 * Reverse entries are kept in their home pair: the local port allocator
 * (conntrack.h) tries ports until the pair of {real, laddr, rport, lport}
 * has a free slot. A reply is then found in its first 128 bytes, and a
 * local port is free exactly when its pair holds no live entry of its key.
 *
 * Several CPUs share a table (RSS may put the two directions of a flow on
 * two CPUs). A CPU claims a free slot by compare-and-swap of its first
 * word, writes the entry with CT_F_BUSY set, then clears it with an
 * atomic exchange; lookups skip busy slots.
 */
#ifndef XLB_CT_TABLE_H
#define XLB_CT_TABLE_H

#include "hash.h"
#include "maps.h"

#ifndef XLB_CT_HASH_SEED
#define XLB_CT_HASH_SEED 0x7ab1e5ed /* changing it moves every entry */
#endif

#define CT_NO_SLOT 0xffffffffu

/* The table's constants once more, as an enum the object's BTF carries (a
 * #define is invisible to bpf2go), so that Go's mirror (cttable.go) is
 * checked against them. */
enum xlb_ct_consts {
	XLB_CT_CONST_HASH_SEED = XLB_CT_HASH_SEED,
	XLB_CT_CONST_JHASH_INIT = XLB_JHASH_INIT,
	XLB_CT_CONST_PROBE = XLB_CT_PROBE,
	XLB_CT_CONST_REUSE_GRACE = XLB_CT_REUSE_GRACE,
	XLB_CT_CONST_HOLD_PERIOD = XLB_CT_HOLD_PERIOD,
	XLB_CT_CONST_HALF_OPEN_AGE = XLB_CT_HALF_OPEN_AGE,
	XLB_CT_CONST_SLOTS_NUM = XLB_CT_SLOTS_PER_CONN_NUM,
	XLB_CT_CONST_SLOTS_DEN = XLB_CT_SLOTS_PER_CONN_DEN,
};

const enum xlb_ct_consts ct_consts_type __attribute__((unused));

_Static_assert((XLB_SVC_ID_LIMIT & (XLB_SVC_ID_LIMIT - 1)) == 0,
	       "ct_idle_past masks service ids with XLB_SVC_ID_LIMIT - 1");

/* A key of either table, 8-byte aligned: keys compare as 64-bit words. */
union ct_key {
	struct ct4_key v4;
	struct ct6_key v6;
	__u64 words[5];
};

/* The first word of a slot, as the claim swaps it. */
union ct_head {
	__u64 word;
	struct {
		__u32 last_seen;
		__u8 state;
		__u8 flags;
		__u16 svc_id;
	} f;
};

/* A probe for a key, and what it found (scalars only: the probes are
 * global functions, which take it as plain memory). */
struct ct_probe {
	union ct_key key; /* what is probed for (set by the caller) */
	__u32 slot;	  /* the slot found or claimed, or CT_NO_SLOT */
	__u16 seen;	  /* an entry of the key was there, live or not */
	__u16 dropped;	  /* the claimed slot was a half-open connection's */
};

_Static_assert(sizeof(struct ct_probe) <=
		       sizeof(((struct ct_scratch *)0)->probe),
	       "ct_scratch has no room for a probe");

/* ct_scratch_of returns this CPU's scratch room. */
static __always_inline struct ct_scratch *ct_scratch_of(void)
{
	/* a key of 8 bytes, so it shares no stack slot with a spilled
	 * register (a partial write makes the verifier forget its value) */
	__u64 zero = 0;

	return bpf_map_lookup_elem(&ct_scratch, &zero);
}

/* ct_hash hashes a key (Go's ctHash computes the same). */
static __always_inline __u32 ct_hash(const union ct_key *k, __u8 family)
{
	__u32 h;

	if (family == XLB_AF_INET)
		return jhash_3words(k->v4.src, k->v4.dst,
				    k->v4.sport | (__u32)k->v4.dport << 16,
				    XLB_CT_HASH_SEED + k->v4.proto);
	h = jhash_3words(k->v6.src[0], k->v6.src[1], k->v6.src[2],
			 XLB_CT_HASH_SEED + k->v6.proto);
	h = jhash_3words(k->v6.src[3], k->v6.dst[0], k->v6.dst[1], h);
	return jhash_3words(k->v6.dst[2], k->v6.dst[3],
			    k->v6.sport | (__u32)k->v6.dport << 16, h);
}

/* ct_home is the home slot of a key: even, below the table's slots. */
static __always_inline __u32 ct_home(const union ct_key *k, __u8 family)
{
	__u32 slots =
		family == XLB_AF_INET ? xlb_cfg.ct4_slots : xlb_cfg.ct6_slots;

	return (__u32)(((__u64)ct_hash(k, family) * (slots / 2)) >> 32) * 2;
}

/* ct_slot returns slot idx of a family's table, or NULL past its end. */
static __always_inline struct ct_entry *ct_slot(__u32 idx, __u8 family)
{
	if (family == XLB_AF_INET)
		return bpf_map_lookup_elem(&ct4, &idx);
	return bpf_map_lookup_elem(&ct6, &idx);
}

/* ct_key_is tells whether the slot holding e holds key k. */
static __always_inline bool ct_key_is(const struct ct_entry *e,
				      const union ct_key *k, __u8 family)
{
	const __u64 *have;

	if (family == XLB_AF_INET) {
		have = (const __u64 *)&((const struct ct4_slot *)e)->key;
		return have[0] == k->words[0] && have[1] == k->words[1];
	}
	have = (const __u64 *)&((const struct ct6_slot *)e)->key;
	return have[0] == k->words[0] && have[1] == k->words[1] &&
	       have[2] == k->words[2] && have[3] == k->words[3] &&
	       have[4] == k->words[4];
}

/* ct_idle_past tells whether an entry of head h has been idle longer
 * than its state's timeout plus grace seconds: the timeout in force for
 * its service (xlb_svc_timeouts, by the service id in the head). */
static __always_inline bool ct_idle_past(const union ct_head *h, __u32 now,
					 __u32 grace)
{
	__u32 state = h->f.state, svc = h->f.svc_id & (XLB_SVC_ID_LIMIT - 1);

	/* one register for the check and the index, so the verifier sees
	 * the bound (clang would otherwise check a copy) */
	asm volatile("" : "+r"(state));
	if (state >= CT_STATE_MAX)
		return true;
	return now - h->f.last_seen > xlb_svc_timeouts[svc].secs[state] + grace;
}

/* ct_forward_gone tells whether the forward entry that reverse entry rev
 * (in slot idx) belongs to is gone: expired past its grace, given back,
 * or another connection's. A slot being written is not gone. */
static __always_inline bool ct_forward_gone(const struct ct_entry *rev,
					    __u32 idx, __u32 now, __u32 family)
{
	struct ct_entry *fwd = ct_slot(rev->peer, family);
	union ct_head h;

	if (!fwd)
		return true;
	h.word = *(volatile __u64 *)fwd;
	if (h.f.flags & CT_F_BUSY)
		return false;
	if ((h.f.flags & (CT_F_USED | CT_F_REVERSE)) != CT_F_USED ||
	    fwd->peer != idx)
		return true;
	return ct_idle_past(&h, now, XLB_CT_REUSE_GRACE);
}

/* ct_free tells whether slot e (index idx, head h) may take a new entry:
 * never used, or idle past its timeout and a grace. A reverse entry is
 * refreshed by its forward entry only once per XLB_CT_HOLD_PERIOD, so it
 * may look idle while its connection lives: it is free once its forward
 * entry is gone too, or XLB_CT_HOLD_PERIOD past its timeout whatever the
 * forward entry says. Its local port is never taken twice, and a closed
 * connection gives it back with its forward entry. */
static __always_inline bool ct_free(const struct ct_entry *e,
				    const union ct_head *h, __u32 idx,
				    __u32 now, __u32 family)
{
	__u8 flags = h->f.flags;

	if (!(flags & CT_F_USED))
		return true;
	if (flags & CT_F_BUSY)
		return false;
	if (!(flags & CT_F_REVERSE))
		return ct_idle_past(h, now, XLB_CT_REUSE_GRACE);
	if (!ct_idle_past(h, now, XLB_CT_REUSE_GRACE))
		return false;
	return ct_idle_past(h, now, XLB_CT_HOLD_PERIOD) ||
	       ct_forward_gone(e, idx, now, family);
}

/* xlb_ct_find probes for key p->key: p->slot is the slot of its live
 * entry, or CT_NO_SLOT; p->seen tells whether an entry of the key was
 * there at all, live or expired. Reads XLB_CT_PROBE slots at most; a live
 * entry of the key stops it, and so does a slot never used.
 *
 * The loops over slots are global functions: the verifier checks each
 * once, for any arguments, rather than once per path that calls it. */
__noinline int xlb_ct_find(struct ct_probe *p, __u32 now, __u32 family)
{
	__u32 home;
	int i;

	if (!p)
		return 0;
	home = ct_home(&p->key, family);
	p->slot = CT_NO_SLOT;
	p->seen = 0;
	p->dropped = 0;
	for (i = 0; i < XLB_CT_PROBE; i++) {
		__u32 idx = home + i;
		struct ct_entry *e = ct_slot(idx, family);
		union ct_head h;

		if (!e)
			return 0;
		h.word = *(volatile __u64 *)e;
		if (!(h.f.flags & CT_F_USED))
			return 0;
		/* a slot given back (state CT_STATE_MAX) holds no entry */
		if ((h.f.flags & CT_F_BUSY) || h.f.state >= CT_STATE_MAX ||
		    !ct_key_is(e, &p->key, family))
			continue;
		p->seen = 1;
		if (ct_idle_past(&h, now, 0))
			continue;
		p->slot = idx;
		return 0;
	}
	return 0;
}

/* ct_find probes for p->key and returns its live entry, or NULL. */
static __always_inline struct ct_entry *ct_find(struct ct_probe *p, __u32 now,
						const __u8 family)
{
	xlb_ct_find(p, now, family);
	if (p->slot == CT_NO_SLOT)
		return NULL;
	return ct_slot(p->slot, family);
}

/* ct_swap_head replaces slot e's first word if it is still old. */
static __always_inline bool ct_swap_head(struct ct_entry *e, __u64 old,
					 __u64 new)
{
	return __sync_val_compare_and_swap((__u64 *)e, old, new) == old;
}

/* ct_head_given_back is the first word of a slot given back: used (a
 * probe goes past it) and expired (state CT_STATE_MAX). */
static __always_inline __u64 ct_head_given_back(void)
{
	union ct_head h;

	h.word = 0;
	h.f.state = CT_STATE_MAX;
	h.f.flags = CT_F_USED;
	return h.word;
}

/* ct_head_busy is the first word of a slot claimed at now. */
static __always_inline __u64 ct_head_busy(__u32 now)
{
	union ct_head h;

	h.word = 0;
	h.f.last_seen = now;
	h.f.flags = CT_F_USED | CT_F_BUSY;
	return h.word;
}

/* ct_claim takes slot e (index idx) for a new entry if it is still free
 * (or, with taken, if it still has the head it had: a closing connection
 * whose key a new one reuses). The slot is then busy until ct_publish. */
static __always_inline bool ct_claim(struct ct_entry *e, __u32 idx, __u32 now,
				     bool taken, __u32 family)
{
	union ct_head old;

	old.word = *(volatile __u64 *)e;
	if (!taken && !ct_free(e, &old, idx, now, family))
		return false;
	if (old.f.flags & CT_F_BUSY)
		return false;
	return ct_swap_head(e, old.word, ct_head_busy(now));
}

/* ct_half_open_stale tells whether a slot of head h holds the forward
 * entry of a half-open TCP connection idle XLB_CT_HALF_OPEN_AGE seconds
 * or more: the only entries a new connection may take the place of. */
static __always_inline bool ct_half_open_stale(const union ct_head *h,
					       __u32 now)
{
	return (h->f.flags & (CT_F_USED | CT_F_BUSY | CT_F_REVERSE)) ==
		       CT_F_USED &&
	       h->f.state == CT_SYN_SENT &&
	       now - h->f.last_seen >= XLB_CT_HALF_OPEN_AGE;
}

/* ct_give_back_reverse gives back the reverse entry of a connection whose
 * forward entry in slot idx was taken: the slot peer, if it still is a
 * reverse entry that points back at idx. */
static __always_inline void ct_give_back_reverse(__u32 peer, __u32 idx,
						 __u32 family)
{
	struct ct_entry *e = ct_slot(peer, family);
	union ct_head h;

	if (!e)
		return;
	h.word = *(volatile __u64 *)e;
	if ((h.f.flags & (CT_F_USED | CT_F_BUSY | CT_F_REVERSE)) !=
		    (CT_F_USED | CT_F_REVERSE) ||
	    e->peer != idx)
		return;
	ct_swap_head(e, h.word, ct_head_given_back());
}

/* xlb_ct_claim_free claims the first free slot of p->key's probe
 * (p->slot gets its index, or CT_NO_SLOT: the probe has no free slot,
 * the table is full there), going past slots another CPU takes first.
 * With no free slot, it takes the place of the stalest half-open
 * connection in the probe (p->dropped): its forward entry's slot, and
 * its reverse entry is given back. Established connections are never
 * taken. */
__noinline int xlb_ct_claim_free(struct ct_probe *p, __u32 now, __u32 family)
{
	__u32 home, victim = CT_NO_SLOT, oldest = 0;
	__u64 victim_head = 0;
	struct ct_entry *e;
	int i;

	if (!p)
		return 0;
	home = ct_home(&p->key, family);
	p->slot = CT_NO_SLOT;
	p->dropped = 0;
	for (i = 0; i < XLB_CT_PROBE; i++) {
		__u32 idx = home + i;
		union ct_head h;

		e = ct_slot(idx, family);
		if (!e)
			break;
		if (ct_claim(e, idx, now, false, family)) {
			p->slot = idx;
			return 0;
		}
		h.word = *(volatile __u64 *)e;
		if (ct_half_open_stale(&h, now) &&
		    (victim == CT_NO_SLOT || now - h.f.last_seen > oldest)) {
			victim = idx;
			victim_head = h.word;
			oldest = now - h.f.last_seen;
		}
	}
	e = ct_slot(victim, family);
	if (!e || !ct_swap_head(e, victim_head, ct_head_busy(now)))
		return 0;
	ct_give_back_reverse(e->peer, victim, family);
	p->slot = victim;
	p->dropped = 1;
	return 0;
}

/* ct_publish writes a claimed slot's entry: the key, the peer's address
 * and the rest of e, then e's first word (the flags without CT_F_BUSY)
 * in one atomic exchange, so a lookup sees all of it or none. */
static __always_inline void ct_publish(struct ct_entry *slot,
				       const union ct_key *k,
				       const struct ct_entry *e,
				       const struct xlb_addr *addr,
				       const __u8 family)
{
	union ct_head h;

	slot->real_id = e->real_id;
	slot->port = e->port;
	slot->peer = e->peer;
	if (family == XLB_AF_INET) {
		struct ct4_slot *s = (struct ct4_slot *)slot;

		s->key = k->v4;
		s->addr4 = addr->w[0];
		__builtin_memset(&s->ext, 0, sizeof(s->ext));
		s->reserved[0] = 0;
	} else {
		struct ct6_slot *s = (struct ct6_slot *)slot;

		s->key = k->v6;
		__builtin_memcpy(s->addr6, addr->w, sizeof(s->addr6));
		__builtin_memset(&s->ext, 0, sizeof(s->ext));
		s->reserved[0] = 0;
	}
	h.f.last_seen = e->last_seen;
	h.f.state = e->state;
	h.f.flags = (e->flags | CT_F_USED) & ~CT_F_BUSY;
	h.f.svc_id = e->svc_id;
	__sync_lock_test_and_set((__u64 *)slot, h.word);
}

/* ct_ext_of returns the extension of the entry e begins. */
static __always_inline struct ct_ext *ct_ext_of(struct ct_entry *e,
						const __u8 family)
{
	if (family == XLB_AF_INET)
		return &((struct ct4_slot *)e)->ext;
	return &((struct ct6_slot *)e)->ext;
}

/* ct_hdr_seq_of returns where the entry e begins keeps its TOA or PROXY
 * v2 sequence number (client_addr.h): TOA, the real's ISN + 1 (forward
 * entry); PROXY v2, the client's ISN + 1, where the header goes. The
 * slot's first reserved word: see struct ct_ext. */
static __always_inline __u32 *ct_hdr_seq_of(struct ct_entry *e,
					    const __u8 family)
{
	if (family == XLB_AF_INET)
		return &((struct ct4_slot *)e)->reserved[0];
	return &((struct ct6_slot *)e)->reserved[0];
}

/* ct_addr reads the address an entry stores (local IP or client). */
static __always_inline void ct_addr(const struct ct_entry *e, __u8 family,
				    struct xlb_addr *addr)
{
	if (family == XLB_AF_INET) {
		__builtin_memset(addr, 0, sizeof(*addr));
		addr->w[0] = ((const struct ct4_slot *)e)->addr4;
		return;
	}
	__builtin_memcpy(addr->w, ((const struct ct6_slot *)e)->addr6,
			 sizeof(addr->w));
}

#endif /* XLB_CT_TABLE_H */
