/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SYN proxy (service flag XLB_SVC_F_SYN_PROXY) on the kernel's raw SYN
 * cookie helpers (Linux 6.0): a spoofed SYN costs one answer and no state.
 *
 *   client SYN        -> xlb answers SYN-ACK, seq = cookie (synack)
 *   client ACK        -> cookie checked: invalid dropped; valid: the
 *                        connection is made (CT_F_SYNPROXY, SYN_SENT) and
 *                        the ACK becomes the SYN to the real (syn)
 *   client data       -> while the real has not answered: the first
 *                        segment is kept (synproxy_early); the SYN-ACK's
 *                        window of one segment lets no more come, and
 *                        more (or a longer one) is dropped and counted:
 *                        the client sends it again
 *   real SYN-ACK      -> becomes the ACK to the real, with the kept data
 *                        (ack); both entries learn the offsets
 *   later segments    -> sequence numbers, timestamps and windows shifted
 *                        between the two handshakes (tcp_edit.h)
 *
 * What is negotiated: the cookie keeps the client's MSS (as one of the
 * kernel's four table values). With timestamps, the low 8 bits of the
 * SYN-ACK's timestamp keep the client's window scale and SACK permission,
 * and the MSS table index, as the kernel's syncookies do; the real gets
 * them in the SYN, and xlb offers the client window scale
 * XLB_SYNPROXY_WSCALE and rescales the real's windows to it. Without
 * timestamps there is neither window scaling nor SACK, and the real is
 * offered the MSS XLB_SYNPROXY_MSS4/6. ECN is not offered.
 *
 * This file decides; synproxy_frames.h builds the frames the proxy sends.
 */
#ifndef XLB_SYNPROXY_H
#define XLB_SYNPROXY_H

#include "csum.h"
#include "ct_table.h"
#include "parse.h"
#include "stats.h"
#include "tcp_edit.h"

/* The loader sets xlb_syncookies to 1 when the kernel has the raw SYN
 * cookie helpers; with 0 the verifier drops their calls as dead code and
 * the control plane refuses syn_proxy. */
const volatile __u32 xlb_syncookies = 0;

/* Verdicts for the entry point (not XDP verdicts, as XLB_TOO_BIG). */
#define XLB_SYNACK    0x101 /* answer the SYN with a cookie */
#define XLB_PROXY_ACK 0x102 /* ACK the real's SYN-ACK, back to the real */

#define XLB_SYNPROXY_MSS4 1460 /* offered to the real without timestamps */
#define XLB_SYNPROXY_MSS6 1440
#define XLB_SYNPROXY_TTL  64
#define XLB_EARLY_MAX                                                          \
	1500 /* bytes of early client data kept: a
				* segment of a 1500-byte MTU */
#define XLB_EARLY_SLOTS 4096

/* The low bits of the SYN-ACK's timestamp. */
#define TSC_WSCALE_NONE 0xf
#define TSC_SACK	0x10
#define TSC_MSS_SHIFT	5
#define TSC_MASK	0xff

/* syncookie_mss is entry i of the kernel's syncookie MSS tables
 * (net/ipv4/syncookies.c, net/ipv6/syncookies.c). */
static __always_inline __u16 syncookie_mss(__u8 family, __u32 i)
{
	switch (i & 3) {
	case 0:
		return family == XLB_AF_INET ? 536 : 1220;
	case 1:
		return family == XLB_AF_INET ? 1300 : 1420;
	case 2:
		return 1440;
	}
	return family == XLB_AF_INET ? 1460 : 8940;
}

/* What a SYN, SYN-ACK or ACK's options say. */
struct syn_opts {
	__u16 mss;   /* 0: none */
	__u8 wscale; /* TSC_WSCALE_NONE: none */
	__u8 sack;   /* SACK permitted */
	__u8 ts;     /* a timestamps option */
	__u8 pad[3];
	__u32 tsval; /* host order */
	__u32 tsecr;
};

/* A client's first data while the real has not answered, kept until its
 * SYN-ACK (keyed by the forward entry's slot and the family). */
struct early_key {
	__u32 slot;
	__u32 family;
};

struct early_data {
	__u32 seq; /* of the first byte, host order */
	__u16 len;
	__u16 pad;
	__u8 bytes[XLB_EARLY_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XLB_EARLY_SLOTS);
	__type(key, struct early_key);
	__type(value, struct early_data);
} synproxy_early SEC(".maps");

/* Per CPU: room for an early_data value off the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct early_data);
} early_scratch SEC(".maps");

/* The slot's words a SYN-proxied connection keeps besides
 * ct_ext.seq_delta: [1] the timestamp offset (while the real has not
 * answered: the client's timestamp), [2] the real's window scale (while
 * it has not answered: the SYN-ACK's timestamp). See struct ct_ext. */
static __always_inline __u32 *ct_word_of(struct ct_entry *e, __u8 family, int i)
{
	if (family == XLB_AF_INET)
		return &((struct ct4_slot *)e)->reserved[i & 3];
	return &((struct ct6_slot *)e)->reserved[i & 3];
}

/* xlb_syn_options reads the options of the TCP header of hlen bytes at
 * frame offset tcp_off into o. A global function (see xlb_tcp_options). */
__noinline int xlb_syn_options(struct xdp_md *ctx, __u32 tcp_off, __u32 hlen,
			       struct syn_opts *o)
{
	__u32 next = sizeof(struct tcphdr), len;
	__u8 opt[10];
	int i;

	if (!o)
		return -1;
	__builtin_memset(o, 0, sizeof(*o));
	o->wscale = TSC_WSCALE_NONE;
	if (!xlb_syncookies)
		return 0;
	for (i = 0; i < XLB_TCP_HDR_MAX - sizeof(struct tcphdr); i++) {
		len = tcp_option_at(ctx, tcp_off, hlen, next, opt);
		if (len == 0)
			break;
		if (opt[0] == XLB_TCPOPT_MSS && opt[1] == 4 &&
		    !bpf_xdp_load_bytes(ctx, tcp_off + next, opt, 4))
			o->mss = (__u16)opt[2] << 8 | opt[3];
		else if (opt[0] == 3 && opt[1] == 3 &&
			 !bpf_xdp_load_bytes(ctx, tcp_off + next, opt, 3))
			o->wscale = opt[2] > 14 ? 14 : opt[2];
		else if (opt[0] == 4 && opt[1] == 2)
			o->sack = 1;
		else if (opt[0] == XLB_TCPOPT_TS && opt[1] == 10 &&
			 !bpf_xdp_load_bytes(ctx, tcp_off + next, opt, 10)) {
			o->ts = 1;
			__builtin_memcpy(&o->tsval, opt + 2, 4);
			__builtin_memcpy(&o->tsecr, opt + 6, 4);
			o->tsval = bpf_ntohl(o->tsval);
			o->tsecr = bpf_ntohl(o->tsecr);
		}
		next += len;
	}
	return 0;
}

/* synproxy_copy_headers copies the IP header at l3_off and 20 bytes of
 * the TCP header at l4_off to the stack, for the cookie helpers, which
 * read them there. */
static __always_inline int
synproxy_copy_headers(struct xdp_md *ctx, __u32 l3_off, __u32 l4_off,
		      __u32 family, struct ipv6hdr *ip, struct tcphdr *tcp)
{
	__u32 ip_len =
		family == XLB_AF_INET ? sizeof(struct iphdr) : sizeof(*ip);

	if (bpf_xdp_load_bytes(ctx, l3_off, ip, ip_len) ||
	    bpf_xdp_load_bytes(ctx, l4_off, tcp, sizeof(*tcp)))
		return -1;
	return 0;
}

/* xlb_synproxy_check tells whether a client's ACK (its IP header at
 * l3_off, its TCP header at l4_off) returns a SYN cookie (0) or not (-1).
 * Numbers, not struct pkt: a global function handed the packet's record
 * would leave its caller's packet pointers unknown. */
__noinline int xlb_synproxy_check(struct xdp_md *ctx, __u32 l3_off,
				  __u32 l4_off, __u32 family)
{
	struct ipv6hdr ip = {};
	struct tcphdr tcp = {};
	long ret;

	if (!xlb_syncookies ||
	    synproxy_copy_headers(ctx, l3_off, l4_off, family, &ip, &tcp))
		return -1;
	if (family == XLB_AF_INET)
		ret = bpf_tcp_raw_check_syncookie_ipv4((struct iphdr *)&ip,
						       &tcp);
	else
		ret = bpf_tcp_raw_check_syncookie_ipv6(&ip, &tcp);
	return ret ? -1 : 0;
}

/* synproxy_pair finds a connection's two entries from the slot of its
 * reverse entry; NULL when either is gone. */
static __always_inline struct ct_entry *
synproxy_pair(__u32 rev_slot, __u8 family, struct ct_entry **fwd)
{
	struct ct_entry *rev = ct_slot(rev_slot, family);

	if (!rev || !(rev->flags & CT_F_REVERSE))
		return NULL;
	*fwd = ct_slot(rev->peer, family);
	if (!*fwd || ((*fwd)->flags & CT_F_REVERSE))
		return NULL;
	return rev;
}

/* xlb_synproxy_keep keeps the len bytes at frame offset off, a client's
 * payload whose first byte is number seq, for the real's answer, under
 * k (the connection's reverse slot), unless some is kept already or it is
 * longer than XLB_EARLY_MAX: the client then sends it again. Returns 0
 * when kept. */
__noinline int xlb_synproxy_keep(struct xdp_md *ctx, const struct early_key *k,
				 __u32 seq, __u32 off, __u32 len)
{
	struct early_data *d;

	if (!k || !xlb_syncookies || len == 0 || len > XLB_EARLY_MAX ||
	    bpf_map_lookup_elem(&synproxy_early, k))
		return -1;
	d = bpf_map_lookup_elem(&early_scratch, &xlb_zero_key);
	if (!d)
		return -1;
	d->seq = seq;
	d->len = len;
	if (bpf_xdp_load_bytes(ctx, off, d->bytes, len) ||
	    bpf_map_update_elem(&synproxy_early, k, d, BPF_NOEXIST))
		return -1;
	count_event(EVENT_SYNPROXY_EARLY_KEPT);
	return 0;
}

/* synproxy_learn sets both entries of a connection whose real answered
 * with o (its SYN-ACK's options, real_isn its ISN) from what the reverse
 * entry kept: the sequence and timestamp offsets, the real's window
 * scale; both are established. */
static __always_inline void synproxy_learn(struct ct_entry *fwd,
					   struct ct_entry *rev,
					   const struct syn_opts *o,
					   __u32 real_isn, const __u8 family)
{
	__u32 delta = real_isn - ct_ext_of(rev, family)->seq_delta;
	__u32 ours = *ct_word_of(rev, family, 2), ts_delta = 0;
	__u32 shift = XLB_WIN_SHIFT_NONE;

	if (o->ts && ours != TSC_MASK)
		ts_delta = ours - o->tsval;
	/* the client scales the real's windows by what we offered */
	if (ours != TSC_MASK && (ours & TSC_WSCALE_NONE) != TSC_WSCALE_NONE)
		shift = o->wscale == TSC_WSCALE_NONE ? 0 : o->wscale;
	ct_ext_of(fwd, family)->seq_delta = delta;
	ct_ext_of(rev, family)->seq_delta = delta;
	*ct_word_of(fwd, family, 1) = ts_delta;
	*ct_word_of(rev, family, 1) = ts_delta;
	*ct_word_of(fwd, family, 2) = shift;
	*ct_word_of(rev, family, 2) = shift;
	fwd->state = CT_ESTABLISHED;
	rev->state = CT_ESTABLISHED;
}

/* ttl_expires tells whether the packet's TTL or hop limit would reach
 * zero on its way through xlb: the proxy answers no SYN that its real
 * would not have seen. */
static __always_inline bool ttl_expires(const struct pkt *pkt)
{
	if (pkt->tuple.family == XLB_AF_INET) {
		const struct iphdr *iph = pkt->l3;

		return (void *)(iph + 1) > pkt->data_end || iph->ttl <= 1;
	}
	const struct ipv6hdr *ip6h = pkt->l3;

	return (void *)(ip6h + 1) > pkt->data_end || ip6h->hop_limit <= 1;
}

/* synproxy_new handles a TCP segment to a SYN-proxied service that has no
 * connection: a SYN is answered with a cookie (XLB_SYNACK), an ACK
 * returning a valid cookie may open the connection (pkt->cookie_ok,
 * XLB_CONTINUE), any other is dropped. */
static __always_inline int synproxy_new(struct xdp_md *ctx, struct pkt *pkt)
{
	__u8 flags = pkt->tcp_flags &
		     (XLB_TCP_SYN | XLB_TCP_ACK | XLB_TCP_RST | XLB_TCP_FIN);

	if (ttl_expires(pkt))
		return count_drop(DROP_TTL_EXPIRED);
	if (flags == XLB_TCP_SYN)
		return XLB_SYNACK;
	if (flags != XLB_TCP_ACK)
		return count_drop(DROP_TCP_NOT_SYN);
	if (xlb_synproxy_check(ctx, pkt->l3_off, pkt->l4_off,
			       pkt->tuple.family))
		return count_drop(DROP_SYNCOOKIE_INVALID);
	pkt->cookie_ok = 1;
	return XLB_CONTINUE;
}

/* synproxy_reopening handles a client's port reused while its
 * SYN-proxied connection (e, found for the segment) is closing: the new
 * SYN marks the entry (it is answered with a cookie, synproxy_new), and
 * only on a marked entry may an ACK that returns a cookie open the new
 * connection (pkt->cookie_ok). Without the mark, a late ACK of the old
 * connection could pass the cookie check: a cookie's low bits are an MSS
 * index, and an acknowledgement number a few bytes past the cookie may
 * still decode as one. */
static __always_inline void synproxy_reopening(struct xdp_md *ctx,
					       struct pkt *pkt,
					       struct ct_entry *e,
					       const __u8 family)
{
	__u8 flags = pkt->tcp_flags &
		     (XLB_TCP_SYN | XLB_TCP_ACK | XLB_TCP_RST | XLB_TCP_FIN);
	struct ct_ext *ext = ct_ext_of(e, family);

	if (e->state < CT_FIN)
		return;
	if (flags == XLB_TCP_SYN) {
		if (ext->hdr_state != CT_HDR_REOPEN)
			ext->hdr_state = CT_HDR_REOPEN;
		return;
	}
	if (flags == XLB_TCP_ACK && ext->hdr_state == CT_HDR_REOPEN &&
	    !xlb_synproxy_check(ctx, pkt->l3_off, pkt->l4_off, family))
		pkt->cookie_ok = 1;
}

/* tcp_plain tells a TCP segment without options (nothing to edit in
 * them). */
static __always_inline bool tcp_plain(const struct pkt *pkt)
{
	const struct tcphdr *tcp = pkt->l4;

	return (void *)(tcp + 1) <= pkt->data_end && tcp->doff == 5;
}

/* synproxy_forward decides what happens to a client's segment of a
 * SYN-proxied connection (e its forward entry): the cookie ACK becomes
 * the SYN to the real; while the real has not answered, data is kept or
 * dropped; then acknowledgements and timestamps are shifted. */
static __always_inline int synproxy_forward(struct xdp_md *ctx, struct pkt *pkt,
					    struct ct_entry *e, bool new_conn,
					    const __u8 family)
{
	const struct tcphdr *tcp = pkt->l4;
	struct tcp_edit *ed;

	if (!(e->flags & CT_F_SYNPROXY))
		return XLB_CONTINUE;
	if (!new_conn && e->state == CT_SYN_SENT) {
		struct early_key k = {.slot = e->peer, .family = family};
		__u32 hlen;

		if (pkt->tcp_flags & XLB_TCP_RST)
			return XLB_CONTINUE;
		if ((void *)(tcp + 1) > pkt->data_end)
			return XDP_ABORTED;
		hlen = tcp->doff * 4;
		if (pkt->l4_len <= hlen ||
		    xlb_synproxy_keep(ctx, &k, bpf_ntohl(tcp->seq),
				      pkt->l4_off + hlen, pkt->l4_len - hlen))
			return count_drop(DROP_SYNPROXY_EARLY);
		return XDP_DROP;
	}
	if (!new_conn && tcp_plain(pkt)) {
		/* no options: the acknowledgement alone, shifted as the
		 * segment is rewritten */
		tcp_shift_begin(pkt, 0, ct_ext_of(e, family)->seq_delta);
		return XLB_CONTINUE;
	}
	ed = tcp_edit_begin(pkt);
	if (!ed)
		return XDP_ABORTED;
	if (new_conn) {
		pkt->edit = TCP_EDIT_TO_SYN;
		ed->peer = e->peer;
		return XLB_CONTINUE;
	}
	ed->ack_add = ct_ext_of(e, family)->seq_delta;
	ed->ts_ecr_add = -*ct_word_of(e, family, 1);
	return XLB_CONTINUE;
}

/* synproxy_reply decides what happens to a real's segment of a
 * SYN-proxied connection (e its reverse entry): its SYN-ACK is answered
 * (XLB_PROXY_ACK); a RST before it goes to the client in the cookie's
 * sequence space; later segments are shifted. */
static __always_inline int synproxy_reply(struct pkt *pkt, struct ct_entry *e,
					  const __u8 family)
{
	const struct tcphdr *tcp = pkt->l4;
	struct ct_ext *ext = ct_ext_of(e, family);
	struct tcp_edit *ed;
	__u32 win_shift;

	if (!(e->flags & CT_F_SYNPROXY))
		return XLB_CONTINUE;
	if ((void *)(tcp + 1) > pkt->data_end)
		return XDP_ABORTED;
	if ((pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK)) ==
	    (XLB_TCP_SYN | XLB_TCP_ACK)) {
		ed = tcp_edit_begin(pkt);
		if (!ed)
			return XDP_ABORTED;
		ed->peer = e->peer;
		return XLB_PROXY_ACK;
	}
	if (e->state == CT_SYN_SENT) {
		if (!(pkt->tcp_flags & XLB_TCP_RST))
			return count_drop(DROP_SYNPROXY_EARLY);
		/* into the cookie's sequence space, where the client is */
		tcp_shift_begin(pkt, ext->seq_delta + 1 - bpf_ntohl(tcp->seq),
				0);
		return XLB_CONTINUE;
	}
	win_shift = *ct_word_of(e, family, 2);
	if (tcp->doff == 5 && win_shift == XLB_WIN_SHIFT_NONE) {
		/* nothing but the sequence number: shifted as the segment
		 * is rewritten */
		tcp_shift_begin(pkt, -ext->seq_delta, 0);
		return XLB_CONTINUE;
	}
	ed = tcp_edit_begin(pkt);
	if (!ed)
		return XDP_ABORTED;
	ed->seq_add = -ext->seq_delta;
	ed->ts_val_add = *ct_word_of(e, family, 1);
	ed->win_shift = win_shift;
	return XLB_CONTINUE;
}

#endif /* XLB_SYNPROXY_H */
