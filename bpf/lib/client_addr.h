/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The client's address at the real through FullNAT (service flags
 * XLB_SVC_F_TOA and XLB_SVC_F_PROXY_V2; a connection keeps its entries'
 * CT_F_TOA or CT_F_PROXY). What happens to each segment is decided here,
 * where the connection is known; tcp_edit.h does it.
 *
 * TOA, as DPVS does it: every client segment that acknowledges exactly
 * the real's SYN-ACK (ack = the real's ISN + 1, learnt from that SYN-ACK)
 * gets option 254 with the client's port and address: the handshake's
 * last ACK, where the toa module reads it, and the client's first data
 * until the real sends some. Nothing is shifted.
 *
 * PROXY v2: the header takes the real's sequence space from the client's
 * ISN + 1 on (hdr_seq): every later client sequence number is L bytes
 * further (L = 28 or 52), and every acknowledgement number and SACK edge
 * of the real is L back. A client segment that starts at hdr_seq, while
 * the real has not acknowledged the header, carries the header ahead of
 * its bytes: the handshake's last ACK (so the real reads the header
 * before it could speak first, as HAProxy sends it first), and again any
 * retransmission of it or of the first data; the real keeps one copy,
 * TCP discards the rest.
 *
 * Both lower the MSS of the real's SYN-ACK by the bytes they add: that is
 * the MSS the client's segments, which grow, are cut to.
 */
#ifndef XLB_CLIENT_ADDR_H
#define XLB_CLIENT_ADDR_H

#include "ct_table.h"
#include "parse.h"
#include "tcp_edit.h"

/* client_addr_flags are the CT_F_* flags a service gives a new TCP
 * connection. */
static __always_inline __u8 client_addr_flags(const struct service *svc,
					      const struct pkt *pkt)
{
	if (pkt->tuple.proto != IPPROTO_TCP)
		return 0;
	if (svc->flags & XLB_SVC_F_PROXY_V2)
		return CT_F_PROXY;
	if (svc->flags & XLB_SVC_F_TOA)
		return CT_F_TOA;
	return 0;
}

/* client_addr_open fills the extension of a new connection's entry. */
static __always_inline void client_addr_open(struct ct_entry *slot,
					     const struct pkt *pkt,
					     const __u8 family)
{
	const struct tcphdr *tcp = pkt->l4;
	struct ct_ext *ext;

	if (!(slot->flags & CT_F_PROXY))
		return;
	if ((void *)(tcp + 1) > pkt->data_end)
		return;
	ext = ct_ext_of(slot, family);
	*ct_hdr_seq_of(slot, family) = bpf_ntohl(tcp->seq) + 1;
	ext->hdr_state = CT_HDR_ARMED;
}

/* client_addr_forward decides the edit of a client's segment. pkt->tuple
 * is still the client's. */
static __always_inline void
client_addr_forward(struct pkt *pkt, struct ct_entry *e, const __u8 family)
{
	const struct tcphdr *tcp = pkt->l4;
	struct tcp_edit *ed;
	struct ct_ext *ext;
	__u8 insert;

	if (!(e->flags & (CT_F_TOA | CT_F_PROXY)) ||
	    (pkt->tcp_flags & XLB_TCP_SYN))
		return;
	if ((void *)(tcp + 1) > pkt->data_end)
		return;
	ext = ct_ext_of(e, family);
	if (e->flags & CT_F_PROXY) {
		if (bpf_ntohl(tcp->seq) != *ct_hdr_seq_of(e, family) ||
		    ext->hdr_state == CT_HDR_ACKED) {
			insert = TCP_INSERT_NONE;
		} else if (pkt->tcp_flags & XLB_TCP_RST) {
			return; /* before the header: nothing to shift */
		} else {
			insert = TCP_INSERT_PROXY;
		}
	} else {
		if (ext->hdr_state != CT_HDR_ARMED ||
		    bpf_ntohl(tcp->ack_seq) != *ct_hdr_seq_of(e, family) ||
		    !(pkt->tcp_flags & XLB_TCP_ACK) ||
		    (pkt->tcp_flags & XLB_TCP_RST))
			return;
		insert = TCP_INSERT_TOA;
	}
	if (insert == TCP_INSERT_NONE) {
		/* a plain shift: done as the segment is rewritten */
		if (tcp->doff == 5) {
			tcp_shift_begin(
				pkt, tcp_insert_len(TCP_INSERT_PROXY, family),
				0);
			return;
		}
	}
	ed = tcp_edit_begin(pkt);
	if (!ed)
		return;
	ed->insert = insert;
	if (insert == TCP_INSERT_NONE)
		ed->seq_add = tcp_insert_len(TCP_INSERT_PROXY, family);
	ed->family = family;
	ed->client = pkt->tuple.src;
	ed->vip = pkt->tuple.dst;
	ed->cport = pkt->tuple.sport;
	ed->vport = pkt->tuple.dport;
	pkt->grow = tcp_insert_len(insert, family);
}

/* client_addr_reply decides the edit of a real's segment, and learns
 * what the forward entry needs from it. */
static __always_inline void
client_addr_reply(struct pkt *pkt, struct ct_entry *e, const __u8 family)
{
	const struct tcphdr *tcp = pkt->l4;
	bool syn_ack = (pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK)) ==
		       (XLB_TCP_SYN | XLB_TCP_ACK);
	struct ct_entry *fwd = NULL;
	struct tcp_edit *ed;
	struct ct_ext *ext;
	__u32 len;

	if (!(e->flags & (CT_F_TOA | CT_F_PROXY)))
		return;
	if ((void *)(tcp + 1) > pkt->data_end)
		return;
	ext = ct_ext_of(e, family);
	if (e->flags & CT_F_TOA) {
		if (!syn_ack)
			return;
		fwd = ct_slot(e->peer, family);
		if (fwd &&
		    (fwd->flags & (CT_F_TOA | CT_F_REVERSE)) == CT_F_TOA) {
			*ct_hdr_seq_of(fwd, family) = bpf_ntohl(tcp->seq) + 1;
			ct_ext_of(fwd, family)->hdr_state = CT_HDR_ARMED;
		}
		len = tcp_insert_len(TCP_INSERT_TOA, family);
	} else {
		len = tcp_insert_len(TCP_INSERT_PROXY, family);
		/* the real took the header: no more copies of it */
		if (ext->hdr_state != CT_HDR_ACKED &&
		    (pkt->tcp_flags & XLB_TCP_ACK) &&
		    (__s32)(bpf_ntohl(tcp->ack_seq) -
			    *ct_hdr_seq_of(e, family)) >= (__s32)len) {
			ext->hdr_state = CT_HDR_ACKED;
			fwd = ct_slot(e->peer, family);
			if (fwd && (fwd->flags & (CT_F_PROXY | CT_F_REVERSE)) ==
					   CT_F_PROXY)
				ct_ext_of(fwd, family)->hdr_state =
					CT_HDR_ACKED;
		}
	}
	if ((e->flags & CT_F_PROXY) && !syn_ack && tcp->doff == 5) {
		/* no SACK to map: the acknowledgement alone, shifted as the
		 * segment is rewritten */
		__u32 ack = bpf_ntohl(tcp->ack_seq);

		if (pkt->tcp_flags & XLB_TCP_ACK)
			tcp_shift_begin(pkt, 0,
					ack_unshift(ack,
						    *ct_hdr_seq_of(e, family),
						    len) -
						ack);
		return;
	}
	ed = tcp_edit_begin(pkt);
	if (!ed)
		return;
	if (syn_ack)
		ed->mss_cut = len;
	if (e->flags & CT_F_PROXY) {
		ed->ack_base = *ct_hdr_seq_of(e, family);
		ed->ack_cut = len;
	}
}

#endif /* XLB_CLIENT_ADDR_H */
