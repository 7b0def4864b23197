/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * TCP segment edits for the client address features (client_addr.h):
 * sequence and acknowledgement numbers shifted, SACK edges with them, a
 * SYN-ACK's MSS lowered, and bytes put after the TCP header: a TOA
 * option (the header grows) or a PROXY v2 header (the payload grows).
 *
 * The decisions are taken where the connection is known (forward_to_real,
 * reply_to_client) and written into a per-CPU struct tcp_edit; the edit
 * itself runs at the program's top once the packet is rewritten and has
 * its verdict (xlb_xdp), in a global function that the verifier follows
 * once. Growing moves the headers, not the payload: the frame's head
 * moves N bytes back (bpf_xdp_adjust_head), the headers are copied to
 * the new start, and the N bytes go between the headers and the payload.
 *
 * Checksums are updated incrementally: every inserted length is even and
 * starts at an even offset of the segment, so the payload's words keep
 * their alignment. A CHECKSUM_PARTIAL segment (nat.h) is summed whole by
 * nat_finish afterwards, from the lengths left in struct pkt.
 */
#ifndef XLB_TCP_EDIT_H
#define XLB_TCP_EDIT_H

#include "csum.h"
#include "csum_seg.h"
#include "parse.h"
#include "stats.h"

/* The loader sets xlb_xdp_bytes to 1 when the kernel has
 * bpf_xdp_load_bytes and bpf_xdp_store_bytes (Linux 5.18); with 0 the
 * verifier drops their calls as dead code, and the control plane refuses
 * the features that need them (a TCP option walk). */
const volatile __u32 xlb_xdp_bytes = 0;

#define XLB_TCPOPT_EOL	0
#define XLB_TCPOPT_NOP	1
#define XLB_TCPOPT_MSS	2
#define XLB_TCPOPT_SACK 5
#define XLB_TCPOPT_TS	8
#define XLB_TCPOPT_TOA	254 /* DPVS's TOA: kind 254 */
#define XLB_TOA4_LEN	8   /* kind, length, port, IPv4 address */
#define XLB_TOA6_LEN	20  /* kind, length, port, IPv6 address */
#define XLB_PROXY4_LEN	28  /* PROXY v2: 16-byte header, 12 of addresses */
#define XLB_PROXY6_LEN	52  /* ... 36 of addresses */
#define XLB_INSERT_MAX	52
#define XLB_TCP_HDR_MAX 60
#define XLB_HEADERS_MAX (18 + 60 + XLB_TCP_HDR_MAX) /* VLAN, IPv4 */

/* What is put after a segment's TCP header. */
enum tcp_insert {
	TCP_INSERT_NONE = 0,
	TCP_INSERT_TOA = 1,   /* a TOA option: the TCP header grows */
	TCP_INSERT_PROXY = 2, /* a PROXY v2 header: the payload grows */
};

/* What xlb_tcp_edit does to one segment. Numbers are host order. An
 * acknowledgement number or SACK edge x becomes, with d = x - ack_base:
 * x - ack_cut if d >= ack_cut, ack_base if 0 <= d < ack_cut, else x (the
 * real's view of the client's bytes has ack_cut bytes more from
 * ack_base on: the PROXY header); then ack_add is added (the SYN proxy's
 * two handshakes, synproxy.h). */
struct tcp_edit {
	__u32 seq_add;	/* added to the sequence number */
	__u32 ack_base; /* see above */
	__u32 ack_add;
	__u32 ts_val_add; /* added to a timestamps option's value */
	__u32 ts_ecr_add; /* ... and to its echo reply */
	__u32 peer;	  /* SYN proxy: the entry's peer slot (synproxy.h) */
	__u16 ack_cut;
	__u16 mss_cut;	/* a SYN's MSS option lowered by this */
	__u8 insert;	/* enum tcp_insert */
	__u8 family;	/* of the addresses below */
	__u8 win_shift; /* SYN proxy: the real's window scale, the
			  * window rescaled to XLB_SYNPROXY_WSCALE; 0xff
			  * none */
	__u8 pad;
	__be16 cport; /* the client's port and address, as the client */
	__be16 vport; /* sent them, and the VIP's */
	struct xlb_addr client;
	struct xlb_addr vip;
};

/* pkt->edit: what kind of edit the packet has. Most change fields of a
 * segment; the SYN proxy turns a client's cookie ACK into the SYN to the
 * real. */
enum tcp_edit_op {
	TCP_EDIT_NONE = 0,
	TCP_EDIT_FIELDS = 1, /* xlb_tcp_edit */
	TCP_EDIT_TO_SYN = 2, /* synproxy.h: xlb_synproxy_syn */
	TCP_EDIT_SHIFT = 3,  /* seq_add and ack_add alone, added by nat_rewrite
			      * (tcp_shift): a segment without options */
};

#define XLB_SYNPROXY_WSCALE 7 /* the window scale the SYN proxy offers */
#define XLB_WIN_SHIFT_NONE  0xff

/* The bytes of an insert, as 16-bit words (zero past its length). */
struct tcp_insert_bytes {
	__u16 w[XLB_INSERT_MAX / 2];
};

/* Per CPU: the edit of the packet being processed (pkt->edit tells). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_edit);
} tcp_edits SEC(".maps");

/* tcp_edit_begin returns this CPU's edit, cleared, and marks pkt as
 * having one; NULL leaves the packet as it is. */
static __always_inline struct tcp_edit *tcp_edit_begin(struct pkt *pkt)
{
	struct tcp_edit *ed = bpf_map_lookup_elem(&tcp_edits, &xlb_zero_key);

	if (!ed)
		return NULL;
	__builtin_memset(ed, 0, sizeof(*ed));
	ed->win_shift = XLB_WIN_SHIFT_NONE;
	pkt->edit = TCP_EDIT_FIELDS;
	return ed;
}

/* tcp_shift_begin has the segment of pkt shifted by seq_add and ack_add
 * as nat_rewrite rewrites it (TCP_EDIT_SHIFT): a connection whose two
 * sides count bytes differently, a segment with no options to edit. */
static __always_inline void tcp_shift_begin(struct pkt *pkt, __u32 seq_add,
					    __u32 ack_add)
{
	struct tcp_edit *ed = bpf_map_lookup_elem(&tcp_edits, &xlb_zero_key);

	if (!ed)
		return;
	ed->seq_add = seq_add;
	ed->ack_add = ack_add;
	pkt->edit = TCP_EDIT_SHIFT;
}

/* tcp_shift adds the edit's seq_add and ack_add to the TCP segment of
 * pkt, and their change to d, for nat_rewrite's checksum update (a
 * partial checksum is summed whole by nat_finish: until then it must
 * keep showing the pseudo-header sum, so it is left alone here). */
static __always_inline int tcp_shift(struct pkt *pkt, struct csum_delta *d)
{
	struct tcp_edit *ed = bpf_map_lookup_elem(&tcp_edits, &xlb_zero_key);
	struct tcphdr *tcp = pkt->l4;
	__u32 old;

	if (!ed || (void *)(tcp + 1) > pkt->data_end)
		return XDP_ABORTED;
	if (ed->seq_add) {
		old = tcp->seq;
		tcp->seq = bpf_htonl(bpf_ntohl(old) + ed->seq_add);
		csum_delta_add32(d, old, tcp->seq);
	}
	if (ed->ack_add) {
		old = tcp->ack_seq;
		tcp->ack_seq = bpf_htonl(bpf_ntohl(old) + ed->ack_add);
		csum_delta_add32(d, old, tcp->ack_seq);
	}
	return XLB_CONTINUE;
}

/* tcp_insert_len is the number of bytes an insert adds. */
static __always_inline __u32 tcp_insert_len(__u8 insert, __u8 family)
{
	if (insert == TCP_INSERT_TOA)
		return family == XLB_AF_INET ? XLB_TOA4_LEN : XLB_TOA6_LEN;
	if (insert == TCP_INSERT_PROXY)
		return family == XLB_AF_INET ? XLB_PROXY4_LEN : XLB_PROXY6_LEN;
	return 0;
}

/* ack_unshift takes the cut bytes from base on out of x (struct
 * tcp_edit). */
static __always_inline __u32 ack_unshift(__u32 x, __u32 base, __u32 cut)
{
	__s32 d = x - base;

	if (d >= (__s32)cut)
		return x - cut;
	if (d >= 0)
		return base;
	return x;
}

/* ack_map maps an acknowledgement number or SACK edge (struct
 * tcp_edit). */
static __always_inline __u32 ack_map(__u32 x, const struct tcp_edit *ed)
{
	return ack_unshift(x, ed->ack_base, ed->ack_cut) + ed->ack_add;
}

/* acks_mapped tells whether an edit maps acknowledgement numbers. */
static __always_inline bool acks_mapped(const struct tcp_edit *ed)
{
	return ed->ack_cut || ed->ack_add;
}

/* csum_rotate returns a 32-bit word as the 16-bit sums see it at frame
 * offset off: at an odd offset its bytes fall in other words, rotated by
 * one byte. No branch: the offsets of options are numbers the verifier
 * does not follow (xlb_tcp_options). */
static __always_inline __u32 csum_rotate(__u32 w, __u32 off)
{
	__u64 twice = (__u64)w << 32 | w;

	return (__u32)(twice >> ((off & 1) * 8));
}

/* csum_delta_add32_at adds the change of a 32-bit field at offset off of
 * the summed bytes. */
static __always_inline void csum_delta_add32_at(struct csum_delta *d, __u32 off,
						__u32 from, __u32 to)
{
	csum_delta_add32(d, csum_rotate(from, off), csum_rotate(to, off));
}

/* xlb_tcp_sack maps the edges of a SACK option, the elen bytes at frame
 * offset off (at: their offset in the segment), and returns the change
 * to the checksum (folded). A global function, followed once. */
__noinline int xlb_tcp_sack(struct xdp_md *ctx, __u32 off, __u32 at, __u32 elen,
			    const struct tcp_edit *ed)
{
	__u32 edges[8] = {}, old;
	struct csum_delta d = {};
	int i;

	if (!ed)
		return 0;
	elen &= ~3u;
	if (elen < 4 || elen > sizeof(edges))
		return 0;
	if (bpf_xdp_load_bytes(ctx, off, edges, elen))
		return 0;
	for (i = 0; i < 8; i++) {
		if (i * 4 >= elen)
			break;
		old = edges[i];
		edges[i] = bpf_htonl(ack_map(bpf_ntohl(old), ed));
		csum_delta_add32_at(&d, at + i * 4, old, edges[i]);
	}
	if (elen >= 4 && elen <= sizeof(edges))
		bpf_xdp_store_bytes(ctx, off, edges, elen);
	return csum_fold32(d.sum);
}

/* tcp_option_at reads the kind and length of the option at offset next
 * of the TCP header of hlen bytes at frame offset tcp_off into opt, and
 * returns how far the next option is: 1 past a NOP, the option's length,
 * or 0 at the end of the options or at a malformed one. (A NOP as the
 * frame's last byte ends the walk too: nothing follows it.) */
static __always_inline __u32 tcp_option_at(struct xdp_md *ctx, __u32 tcp_off,
					   __u32 hlen, __u32 next, __u8 *opt)
{
	if (next >= hlen || bpf_xdp_load_bytes(ctx, tcp_off + next, opt, 2) ||
	    opt[0] == XLB_TCPOPT_EOL)
		return 0;
	if (opt[0] == XLB_TCPOPT_NOP)
		return 1;
	if (opt[1] < 2 || next + opt[1] > hlen)
		return 0;
	return opt[1];
}

/* xlb_tcp_ts adds the edit's offsets to the value and echo reply of the
 * timestamps option whose 8 bytes are at frame offset off (at: in the
 * segment), and returns the change to the checksum (folded). */
__noinline int xlb_tcp_ts(struct xdp_md *ctx, __u32 off, __u32 at,
			  const struct tcp_edit *ed)
{
	struct csum_delta d = {};
	__u32 ts[2], old[2];

	if (!ed || bpf_xdp_load_bytes(ctx, off, ts, sizeof(ts)))
		return 0;
	old[0] = ts[0];
	old[1] = ts[1];
	ts[0] = bpf_htonl(bpf_ntohl(ts[0]) + ed->ts_val_add);
	ts[1] = bpf_htonl(bpf_ntohl(ts[1]) + ed->ts_ecr_add);
	csum_delta_add32_at(&d, at, old[0], ts[0]);
	csum_delta_add32_at(&d, at + 4, old[1], ts[1]);
	bpf_xdp_store_bytes(ctx, off, ts, sizeof(ts));
	return csum_fold32(d.sum);
}

/* xlb_tcp_options lowers the MSS option and maps the SACK edges of the
 * options of the TCP header of hlen bytes at frame offset tcp_off, and
 * returns the change to its checksum (a folded one's-complement sum).
 * Options are read with bpf_xdp_load_bytes: their offsets, which the
 * options themselves give, are then mere numbers to the verifier, whose
 * states stay few whatever the options. A global function. */
__noinline int xlb_tcp_options(struct xdp_md *ctx, __u32 tcp_off, __u32 hlen,
			       const struct tcp_edit *ed)
{
	struct csum_delta d = {};
	__u32 next = sizeof(struct tcphdr), len;
	__u8 opt[2];
	__u16 mss;
	int i;

	if (!ed || !xlb_xdp_bytes)
		return 0;
	for (i = 0; i < XLB_TCP_HDR_MAX - sizeof(struct tcphdr); i++) {
		len = tcp_option_at(ctx, tcp_off, hlen, next, opt);
		if (len == 0)
			break;
		if (opt[0] == XLB_TCPOPT_MSS && opt[1] == 4 && ed->mss_cut &&
		    !bpf_xdp_load_bytes(ctx, tcp_off + next + 2, &mss, 2) &&
		    bpf_ntohs(mss) > ed->mss_cut + 64) {
			__u16 lowered = bpf_htons(bpf_ntohs(mss) - ed->mss_cut);

			bpf_xdp_store_bytes(ctx, tcp_off + next + 2, &lowered,
					    2);
			csum_delta_add32_at(&d, next + 2, mss, lowered);
			count_event(EVENT_MSS_LOWERED);
		} else if (opt[0] == XLB_TCPOPT_TS && opt[1] == 10 &&
			   (ed->ts_val_add || ed->ts_ecr_add)) {
			d.sum += xlb_tcp_ts(ctx, tcp_off + next + 2, next + 2,
					    ed);
		} else if (opt[0] == XLB_TCPOPT_SACK && acks_mapped(ed)) {
			d.sum += xlb_tcp_sack(ctx, tcp_off + next + 2, next + 2,
					      opt[1] - 2, ed);
		}
		next += len;
	}
	return csum_fold32(d.sum);
}

/* tcp_insert_build writes the bytes of an insert into buf and returns
 * their number. */
static __always_inline __u32 tcp_insert_build(const struct tcp_edit *ed,
					      __u8 *buf)
{
	static const __u8 proxy_sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
					   0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
	__be16 len;

	if (ed->insert == TCP_INSERT_TOA) {
		buf[0] = XLB_TCPOPT_TOA;
		__builtin_memcpy(buf + 2, &ed->cport, 2);
		if (ed->family == XLB_AF_INET) {
			buf[1] = XLB_TOA4_LEN;
			__builtin_memcpy(buf + 4, ed->client.w, 4);
			return XLB_TOA4_LEN;
		}
		buf[1] = XLB_TOA6_LEN;
		__builtin_memcpy(buf + 4, ed->client.w, 16);
		return XLB_TOA6_LEN;
	}
	/* PROXY protocol v2: signature, version 2 + PROXY, the family with
	 * STREAM, the length of the addresses, then source address,
	 * destination address, source port, destination port */
	__builtin_memcpy(buf, proxy_sig, sizeof(proxy_sig));
	buf[12] = 0x21;
	if (ed->family == XLB_AF_INET) {
		buf[13] = 0x11;
		len = bpf_htons(XLB_PROXY4_LEN - 16);
		__builtin_memcpy(buf + 14, &len, 2);
		__builtin_memcpy(buf + 16, ed->client.w, 4);
		__builtin_memcpy(buf + 20, ed->vip.w, 4);
		__builtin_memcpy(buf + 24, &ed->cport, 2);
		__builtin_memcpy(buf + 26, &ed->vport, 2);
		return XLB_PROXY4_LEN;
	}
	buf[13] = 0x21;
	len = bpf_htons(XLB_PROXY6_LEN - 16);
	__builtin_memcpy(buf + 14, &len, 2);
	__builtin_memcpy(buf + 16, ed->client.w, 16);
	__builtin_memcpy(buf + 32, ed->vip.w, 16);
	__builtin_memcpy(buf + 48, &ed->cport, 2);
	__builtin_memcpy(buf + 50, &ed->vport, 2);
	return XLB_PROXY6_LEN;
}

/* tcp_lengths_grow adds n bytes to the IP length (and the IPv4 header
 * checksum) and the change of the pseudo-header's length to d. */
static __always_inline int tcp_lengths_grow(void *data, void *data_end,
					    struct pkt *pkt, __u32 n,
					    struct csum_delta *d)
{
	__u32 l3_off = pkt->l3_off & 0x1f;
	__be16 old, new;

	old = bpf_htons(pkt->l4_len);
	new = bpf_htons(pkt->l4_len + n);
	csum_delta_add16(d, old, new);
	if (pkt->tuple.family == XLB_AF_INET) {
		struct iphdr *iph = data + l3_off;
		struct csum_delta l3d = {};

		if ((void *)(iph + 1) > data_end)
			return -1;
		old = iph->tot_len;
		iph->tot_len = bpf_htons(bpf_ntohs(old) + n);
		csum_delta_add16(&l3d, old, iph->tot_len);
		iph->check = csum_apply(iph->check, &l3d);
	} else {
		struct ipv6hdr *ip6h = data + l3_off;

		if ((void *)(ip6h + 1) > data_end)
			return -1;
		ip6h->payload_len = bpf_htons(bpf_ntohs(ip6h->payload_len) + n);
	}
	pkt->len += n;
	pkt->ip_len += n;
	pkt->l4_len += n;
	return 0;
}

/* tcp_headers_move copies the first len bytes of the frame from offset n
 * to offset 0 (the head has just moved n bytes back): 8 bytes at a time
 * (n is at least 8, so a word is read before the copy reaches it), then
 * the rest in 16-bit words (every header length is even). */
static __always_inline int tcp_headers_move(struct xdp_md *ctx, __u32 n,
					    __u32 len)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u32 i, done = 0;
	void *to, *from;

	if (n < 8)
		return -1;
	for (i = 0; i < XLB_HEADERS_MAX / 8; i++) {
		if (done + 8 > len)
			break;
		to = data + (done & 0xff);
		from = data + ((n + done) & 0xff);
		if (from + 8 > data_end || to + 8 > data_end)
			return -1;
		*(__u64 *)to = *(__u64 *)from;
		done += 8;
	}
	for (i = 0; i < 4; i++) {
		if (done + 2 > len)
			return 0;
		to = data + (done & 0xff);
		from = data + ((n + done) & 0xff);
		if (from + 2 > data_end || to + 2 > data_end)
			return -1;
		*(__u16 *)to = *(__u16 *)from;
		done += 2;
	}
	return 0;
}

/* tcp_insert_write copies the n bytes of an insert to p. */
static __always_inline int tcp_insert_write(__u8 *p, void *data_end,
					    const struct tcp_insert_bytes *ins,
					    __u32 n)
{
	switch (n) {
	case XLB_TOA4_LEN:
		if ((void *)(p + XLB_TOA4_LEN) > data_end)
			return -1;
		__builtin_memcpy(p, ins, XLB_TOA4_LEN);
		return 0;
	case XLB_TOA6_LEN:
		if ((void *)(p + XLB_TOA6_LEN) > data_end)
			return -1;
		__builtin_memcpy(p, ins, XLB_TOA6_LEN);
		return 0;
	case XLB_PROXY4_LEN:
		if ((void *)(p + XLB_PROXY4_LEN) > data_end)
			return -1;
		__builtin_memcpy(p, ins, XLB_PROXY4_LEN);
		return 0;
	case XLB_PROXY6_LEN:
		if ((void *)(p + XLB_PROXY6_LEN) > data_end)
			return -1;
		__builtin_memcpy(p, ins, XLB_PROXY6_LEN);
		return 0;
	}
	return -1;
}

/* xlb_tcp_grow moves the frame's head n bytes back, the hdr_end bytes
 * of headers with it, and writes the insert between them and the
 * payload. A global function: the verifier follows the copy once, not
 * once per length of headers its callers may have. */
__noinline int xlb_tcp_grow(struct xdp_md *ctx, __u32 hdr_end, __u32 n,
			    const struct tcp_insert_bytes *ins)
{
	__u8 *p;

	if (!ins || hdr_end > XLB_HEADERS_MAX || n > XLB_INSERT_MAX)
		return -1;
	if (bpf_xdp_adjust_head(ctx, -(int)n))
		return -1;
	if (tcp_headers_move(ctx, n, hdr_end))
		return -1;
	p = (void *)(long)ctx->data + (hdr_end & 0xff);
	return tcp_insert_write(p, (void *)(long)ctx->data_end, ins, n);
}

/* xlb_tcp_edit applies this CPU's struct tcp_edit to the rewritten TCP
 * segment of pkt (whose pointers it does not use: a global function
 * sees them as numbers) and returns the verdict: XDP_REDIRECT, or a drop
 * when the frame is not what parsing found. */
__noinline int xlb_tcp_edit(struct xdp_md *ctx, struct pkt *pkt)
{
	struct tcp_insert_bytes ins = {};
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct csum_delta d = {};
	struct tcp_edit *ed;
	__u32 l4_off, hlen, n = 0, i;
	__u32 seq, ack;
	struct tcphdr *tcp;

	if (!pkt)
		return XDP_ABORTED;
	ed = bpf_map_lookup_elem(&tcp_edits, &xlb_zero_key);
	if (!ed)
		return XDP_ABORTED;
	l4_off = pkt->l4_off & 0x7f;
	tcp = data + l4_off;
	if ((void *)(tcp + 1) > data_end)
		return count_drop(DROP_L4_TRUNCATED);

	if (ed->seq_add) {
		seq = tcp->seq;
		tcp->seq = bpf_htonl(bpf_ntohl(seq) + ed->seq_add);
		csum_delta_add32(&d, seq, tcp->seq);
	}
	if (acks_mapped(ed) && tcp->ack) {
		ack = tcp->ack_seq;
		tcp->ack_seq = bpf_htonl(ack_map(bpf_ntohl(ack), ed));
		csum_delta_add32(&d, ack, tcp->ack_seq);
	}
	if (ed->win_shift != XLB_WIN_SHIFT_NONE) {
		__u16 old = tcp->window;
		__u32 win = ((__u32)bpf_ntohs(old) << (ed->win_shift & 0xf)) >>
			    XLB_SYNPROXY_WSCALE;

		tcp->window = bpf_htons(win > 0xffff ? 0xffff : win);
		csum_delta_add16(&d, old, tcp->window);
	}
	hlen = tcp->doff * 4;
	if (hlen > sizeof(*tcp) && (ed->mss_cut || acks_mapped(ed) ||
				    ed->ts_val_add || ed->ts_ecr_add)) {
		d.sum += xlb_tcp_options(ctx, l4_off, hlen, ed);
		/* the helpers may have moved the frame's data */
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
		tcp = data + l4_off;
		if ((void *)(tcp + 1) > data_end)
			return count_drop(DROP_L4_TRUNCATED);
	}

	if (ed->insert != TCP_INSERT_NONE) {
		if (ed->insert == TCP_INSERT_TOA &&
		    hlen + tcp_insert_len(TCP_INSERT_TOA, ed->family) >
			    XLB_TCP_HDR_MAX) {
			count_event(EVENT_TOA_NO_ROOM);
			goto apply;
		}
		n = tcp_insert_build(ed, (__u8 *)ins.w);
		for (i = 0; i < XLB_INSERT_MAX / 2; i++)
			d.sum += ins.w[i]; /* zero past n */
		if (ed->insert == TCP_INSERT_TOA) {
			/* the data offset shares a word with the flags */
			__u16 old = *(__u16 *)((__u8 *)tcp + 12);

			tcp->doff += n / 4;
			csum_delta_add16(&d, old, *(__u16 *)((__u8 *)tcp + 12));
		}
		if (tcp_lengths_grow(data, data_end, pkt, n, &d))
			return count_drop(DROP_L4_TRUNCATED);
	}
apply:
	if (!pkt->csum_off)
		tcp->check = csum_apply(tcp->check, &d);
	if (!n)
		return XDP_REDIRECT;

	if (xlb_tcp_grow(ctx, l4_off + hlen, n, &ins))
		return XDP_ABORTED;
	count_event(ed->insert == TCP_INSERT_TOA ? EVENT_TOA_ADDED
						 : EVENT_PROXY_HDR_SENT);
	return XDP_REDIRECT;
}

#endif /* XLB_TCP_EDIT_H */
