/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The frames of the SYN proxy (synproxy.h), each built in place from the
 * frame that asked for it, at the program's top once its verdict is known
 * (xlb_xdp): the SYN-ACK with a cookie (from the client's SYN), the SYN
 * to the real (from the client's cookie ACK) and the ACK that joins the
 * two handshakes (from the real's SYN-ACK). Each is a global function:
 * the verifier follows it once. The new TCP header is written whole with
 * bpf_xdp_store_bytes and its checksum left to nat_finish.
 */
#ifndef XLB_SYNPROXY_FRAMES_H
#define XLB_SYNPROXY_FRAMES_H

#include "synproxy.h"

/* A TCP header as the proxy writes it: 20 bytes and up to 20 of options. */
struct syn_hdr {
	struct tcphdr tcp;
	__u8 opts[20];
};

/* syn_hdr_opts writes a SYN's or SYN-ACK's options (MSS; with timestamps,
 * SACK permitted if sack, and the window scale unless none) and returns
 * their length: 4, 16 or 20. */
static __always_inline __u32 syn_hdr_opts(__u8 *b, __u16 mss, __u8 wscale,
					  bool sack, bool ts, __u32 tsval,
					  __u32 tsecr)
{
	__be16 m = bpf_htons(mss);
	__be32 v = bpf_htonl(tsval), e = bpf_htonl(tsecr);

	b[0] = XLB_TCPOPT_MSS;
	b[1] = 4;
	__builtin_memcpy(b + 2, &m, 2);
	if (!ts)
		return 4;
	b[4] = sack ? 4 : XLB_TCPOPT_NOP;
	b[5] = sack ? 2 : XLB_TCPOPT_NOP;
	b[6] = XLB_TCPOPT_TS;
	b[7] = 10;
	__builtin_memcpy(b + 8, &v, 4);
	__builtin_memcpy(b + 12, &e, 4);
	if (wscale == TSC_WSCALE_NONE)
		return 16;
	b[16] = XLB_TCPOPT_NOP;
	b[17] = 3;
	b[18] = 3;
	b[19] = wscale;
	return 20;
}

/* synproxy_resize makes the frame end len bytes after its start. */
static __always_inline int synproxy_resize(struct xdp_md *ctx, __u32 len)
{
	__u32 have = xlb_frags ? bpf_xdp_get_buff_len(ctx)
			       : (__u32)(ctx->data_end - ctx->data);

	return bpf_xdp_adjust_tail(ctx, (int)len - (int)have);
}

/* synproxy_ip_finish writes the IP header's length for a segment of
 * l4_len bytes (and TTL 64 when ttl), and its IPv4 checksum, and leaves
 * the TCP checksum to nat_finish (pkt->csum_off). */
static __always_inline int
synproxy_ip_finish(struct xdp_md *ctx, struct pkt *pkt, __u32 l4_len, bool ttl)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u32 l3_off = pkt->l3_off & 0x1f;

	if (pkt->tuple.family == XLB_AF_INET) {
		struct iphdr *iph = data + l3_off;

		if ((void *)(iph + 1) > data_end)
			return -1;
		iph->tot_len = bpf_htons(sizeof(*iph) + l4_len);
		if (ttl)
			iph->ttl = XLB_SYNPROXY_TTL;
		iph->check = 0;
		iph->check = ~csum_fold32((__u32)bpf_csum_diff(
			NULL, 0, (void *)iph, sizeof(*iph), 0));
		pkt->ip_len = sizeof(*iph) + l4_len;
	} else {
		struct ipv6hdr *ip6h = data + l3_off;

		if ((void *)(ip6h + 1) > data_end)
			return -1;
		ip6h->payload_len = bpf_htons(l4_len);
		if (ttl)
			ip6h->hop_limit = XLB_SYNPROXY_TTL;
		pkt->ip_len = sizeof(*ip6h) + l4_len;
	}
	pkt->l4_len = l4_len;
	pkt->len = pkt->l4_off + l4_len;
	pkt->csum_off = XLB_TCP_CSUM_OFF;
	return 0;
}

/* synproxy_turn_around swaps the frame's MACs, addresses and ports (the
 * frame goes back where it came from) in the frame and in pkt->tuple. */
static __always_inline int synproxy_turn_around(struct xdp_md *ctx,
						struct pkt *pkt)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u32 l3_off = pkt->l3_off & 0x1f;
	struct xlb_tuple t = pkt->tuple;
	struct ethhdr *eth = data;
	__u8 mac[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	if (t.family == XLB_AF_INET) {
		struct iphdr *iph = data + l3_off;

		if ((void *)(iph + 1) > data_end)
			return -1;
		iph->saddr = t.dst.w[0];
		iph->daddr = t.src.w[0];
	} else {
		struct ipv6hdr *ip6h = data + l3_off;

		if ((void *)(ip6h + 1) > data_end)
			return -1;
		__builtin_memcpy(&ip6h->saddr, t.dst.w, 16);
		__builtin_memcpy(&ip6h->daddr, t.src.w, 16);
	}
	pkt->tuple.src = t.dst;
	pkt->tuple.dst = t.src;
	pkt->tuple.sport = t.dport;
	pkt->tuple.dport = t.sport;
	return 0;
}

/* synproxy_back sends the frame out where it came in (see pmtu.h). */
static __always_inline int synproxy_back(struct xdp_md *ctx)
{
	if (bpf_redirect_map(&tx_ports, ctx->ingress_ifindex, 0) ==
	    XDP_REDIRECT)
		return XDP_REDIRECT;
	return XDP_TX;
}

/* synproxy_segment reads the TCP header of pkt's segment into tcp and
 * returns this CPU's edit (its peer names the connection), or NULL. */
static __always_inline struct tcp_edit *
synproxy_segment(struct xdp_md *ctx, const struct pkt *pkt, struct tcphdr *tcp)
{
	struct tcp_edit *ed = bpf_map_lookup_elem(&tcp_edits, &xlb_zero_key);

	if (!ed || bpf_xdp_load_bytes(ctx, pkt->l4_off, tcp, sizeof(*tcp)))
		return NULL;
	return ed;
}

/* synproxy_write puts the header h with n bytes of options (and len
 * bytes of data after it, from early when len) into the frame as its TCP
 * segment. */
static __always_inline int synproxy_write(struct xdp_md *ctx, struct pkt *pkt,
					  struct syn_hdr *h, __u32 n,
					  const struct early_data *early,
					  __u32 len, bool ttl)
{
	__u32 hlen = (sizeof(h->tcp) + n) & 0x3c;

	if (hlen < sizeof(h->tcp) || len > XLB_EARLY_MAX)
		return -1;
	h->tcp.doff = hlen / 4;
	if (synproxy_resize(ctx, pkt->l4_off + hlen + len) ||
	    bpf_xdp_store_bytes(ctx, pkt->l4_off, h, hlen))
		return -1;
	if (early && len > 0 &&
	    bpf_xdp_store_bytes(ctx, pkt->l4_off + hlen, (void *)early->bytes,
				len))
		return -1;
	return synproxy_ip_finish(ctx, pkt, hlen + len, ttl);
}

/* xlb_synproxy_synack answers a client's SYN with a SYN-ACK whose
 * sequence number is a SYN cookie, in place, back where it came from. */
__noinline int xlb_synproxy_synack(struct xdp_md *ctx, struct pkt *pkt)
{
	struct ipv6hdr ip = {};
	struct syn_hdr h = {};
	__u32 hlen, n, idx = 0, i, client_seq;
	struct syn_opts o;
	__s64 cookie;
	__u16 mss;
	__u8 enc;

	if (!pkt || !xlb_syncookies)
		return XDP_DROP;
	if (synproxy_copy_headers(ctx, pkt->l3_off, pkt->l4_off,
				  pkt->tuple.family, &ip, &h.tcp))
		return count_drop(DROP_L4_TRUNCATED);
	hlen = h.tcp.doff * 4;
	if (hlen < sizeof(h.tcp) || hlen > sizeof(h) ||
	    bpf_xdp_load_bytes(ctx, pkt->l4_off, &h, hlen))
		return count_drop(DROP_TCP_DOFF);
	if (pkt->tuple.family == XLB_AF_INET)
		cookie = bpf_tcp_raw_gen_syncookie_ipv4((struct iphdr *)&ip,
							&h.tcp, hlen);
	else
		cookie = bpf_tcp_raw_gen_syncookie_ipv6(&ip, &h.tcp, hlen);
	if (cookie < 0)
		return count_drop(DROP_TCP_DOFF);
	mss = cookie >> 32;
	client_seq = bpf_ntohl(h.tcp.seq);
	xlb_syn_options(ctx, pkt->l4_off, hlen, &o);
	for (i = 0; i < 4; i++)
		if (syncookie_mss(pkt->tuple.family, i) == mss)
			idx = i;
	enc = (o.wscale & TSC_WSCALE_NONE) | (o.sack ? TSC_SACK : 0) |
	      idx << TSC_MSS_SHIFT;

	__builtin_memset(&h, 0, sizeof(h));
	h.tcp.source = pkt->tuple.dport;
	h.tcp.dest = pkt->tuple.sport;
	h.tcp.seq = bpf_htonl((__u32)cookie);
	h.tcp.ack_seq = bpf_htonl(client_seq + 1);
	h.tcp.syn = 1;
	h.tcp.ack = 1;
	/* one segment the proxy can keep until the real answers: the real's
	 * first acknowledgement opens the window */
	h.tcp.window = bpf_htons(mss < XLB_EARLY_MAX ? mss : XLB_EARLY_MAX);
	n = syn_hdr_opts(h.opts, mss,
			 o.wscale == TSC_WSCALE_NONE ? TSC_WSCALE_NONE
						     : XLB_SYNPROXY_WSCALE,
			 o.sack, o.ts, (o.tsval & ~TSC_MASK) | enc, o.tsval);
	if (synproxy_turn_around(ctx, pkt) ||
	    synproxy_write(ctx, pkt, &h, n, NULL, 0, true))
		return XDP_ABORTED;
	count_event(EVENT_SYNCOOKIE_SENT);
	return synproxy_back(ctx);
}

/* xlb_synproxy_ack answers the real's SYN-ACK (the edit's peer: the
 * connection's forward slot) with the ACK that completes its handshake,
 * carrying the client's kept data, back to the real. The first time, the
 * connection learns its offsets (synproxy_learn); a SYN-ACK the real
 * sends again is acknowledged again. */
__noinline int xlb_synproxy_ack(struct xdp_md *ctx, struct pkt *pkt)
{
	struct early_data *early = NULL;
	struct ct_entry *fwd, *rev;
	struct early_key k = {};
	struct syn_hdr h = {};
	struct tcp_edit *ed;
	struct syn_opts o;
	__u32 real_isn, ours, len = 0, n = 0;
	__be32 v, e;
	__u8 family;

	if (!pkt || !xlb_syncookies)
		return XDP_DROP;
	ed = synproxy_segment(ctx, pkt, &h.tcp);
	if (!ed)
		return XDP_ABORTED;
	family = pkt->tuple.family;
	xlb_syn_options(ctx, pkt->l4_off, h.tcp.doff * 4, &o);
	real_isn = bpf_ntohl(h.tcp.seq);
	ours = bpf_ntohl(h.tcp.ack_seq); /* the client's ISN + 1 */
	fwd = ct_slot(ed->peer,
		      family == XLB_AF_INET ? XLB_AF_INET : XLB_AF_INET6);
	if (!fwd || (fwd->flags & CT_F_REVERSE))
		return XDP_ABORTED;
	k.slot = fwd->peer;
	k.family = family;
	if (family == XLB_AF_INET) {
		rev = synproxy_pair(fwd->peer, XLB_AF_INET, &fwd);
		if (rev && rev->state == CT_SYN_SENT) {
			synproxy_learn(fwd, rev, &o, real_isn, XLB_AF_INET);
			count_event(EVENT_SYNPROXY_OPENED);
			early = bpf_map_lookup_elem(&synproxy_early, &k);
		}
	} else {
		rev = synproxy_pair(fwd->peer, XLB_AF_INET6, &fwd);
		if (rev && rev->state == CT_SYN_SENT) {
			synproxy_learn(fwd, rev, &o, real_isn, XLB_AF_INET6);
			count_event(EVENT_SYNPROXY_OPENED);
			early = bpf_map_lookup_elem(&synproxy_early, &k);
		}
	}
	if (!rev)
		return XDP_ABORTED;
	if (early && early->seq == ours)
		len = early->len;

	__builtin_memset(&h, 0, sizeof(h));
	h.tcp.source = pkt->tuple.dport;
	h.tcp.dest = pkt->tuple.sport;
	h.tcp.seq = bpf_htonl(ours);
	h.tcp.ack_seq = bpf_htonl(real_isn + 1);
	h.tcp.ack = 1;
	h.tcp.psh = len > 0;
	h.tcp.window = bpf_htons(0xffff >> XLB_SYNPROXY_WSCALE);
	if (o.ts) {
		/* the real echoed the client's timestamp: echo its own */
		v = bpf_htonl(o.tsecr);
		e = bpf_htonl(o.tsval);
		h.opts[0] = XLB_TCPOPT_NOP;
		h.opts[1] = XLB_TCPOPT_NOP;
		h.opts[2] = XLB_TCPOPT_TS;
		h.opts[3] = 10;
		__builtin_memcpy(h.opts + 4, &v, 4);
		__builtin_memcpy(h.opts + 8, &e, 4);
		n = 12;
	}
	if (synproxy_turn_around(ctx, pkt) ||
	    synproxy_write(ctx, pkt, &h, n, early, len, true))
		return XDP_ABORTED;
	if (early)
		bpf_map_delete_elem(&synproxy_early, &k);
	return synproxy_back(ctx);
}

/* xlb_synproxy_syn turns the client's cookie ACK, rewritten towards the
 * real (the edit's peer: the new connection's reverse slot), into the
 * SYN to the real, with the options the cookie kept; keeps its data for
 * the real's answer, and the offsets to come in the reverse entry. */
__noinline int xlb_synproxy_syn(struct xdp_md *ctx, struct pkt *pkt)
{
	struct ct_entry *fwd, *rev;
	struct tcp_edit *ed;
	struct syn_hdr h = {};
	struct syn_opts o;
	__u32 hlen, n, seq, ack;
	__u16 mss;
	__u8 ws = TSC_WSCALE_NONE, sack = 0, family;

	if (!pkt || !xlb_syncookies)
		return XDP_DROP;
	ed = synproxy_segment(ctx, pkt, &h.tcp);
	if (!ed)
		return XDP_ABORTED;
	family = pkt->tuple.family;
	hlen = h.tcp.doff * 4;
	seq = bpf_ntohl(h.tcp.seq);
	ack = bpf_ntohl(h.tcp.ack_seq);
	xlb_syn_options(ctx, pkt->l4_off, hlen, &o);
	mss = family == XLB_AF_INET ? XLB_SYNPROXY_MSS4 : XLB_SYNPROXY_MSS6;
	if (o.ts) {
		ws = o.tsecr & TSC_WSCALE_NONE;
		sack = !!(o.tsecr & TSC_SACK);
		mss = syncookie_mss(family, o.tsecr >> TSC_MSS_SHIFT);
	}
	rev = family == XLB_AF_INET
		      ? synproxy_pair(ed->peer, XLB_AF_INET, &fwd)
		      : synproxy_pair(ed->peer, XLB_AF_INET6, &fwd);
	if (!rev)
		return XDP_ABORTED;
	/* until the real answers: the cookie (our ISN) and our timestamp
	 * (its low bits: what the cookie kept; all ones without one) */
	if (family == XLB_AF_INET) {
		ct_ext_of(rev, XLB_AF_INET)->seq_delta = ack - 1;
		*ct_word_of(rev, XLB_AF_INET, 2) = o.ts ? o.tsecr : TSC_MASK;
	} else {
		ct_ext_of(rev, XLB_AF_INET6)->seq_delta = ack - 1;
		*ct_word_of(rev, XLB_AF_INET6, 2) = o.ts ? o.tsecr : TSC_MASK;
	}
	if (pkt->l4_len > hlen) {
		struct early_key k = {.slot = ed->peer, .family = family};

		xlb_synproxy_keep(ctx, &k, seq, pkt->l4_off + hlen,
				  pkt->l4_len - hlen);
	}
	count_event(EVENT_SYNCOOKIE_VALID);

	__builtin_memset(&h.tcp, 0, sizeof(h.tcp));
	h.tcp.source = pkt->tuple.sport;
	h.tcp.dest = pkt->tuple.dport;
	h.tcp.seq = bpf_htonl(seq - 1);
	h.tcp.syn = 1;
	h.tcp.window = bpf_htons(0xffff);
	n = syn_hdr_opts(h.opts, mss, ws, sack, o.ts, o.tsval, 0);
	if (synproxy_write(ctx, pkt, &h, n, NULL, 0, false))
		return XDP_ABORTED;
	return XDP_REDIRECT;
}

#endif /* XLB_SYNPROXY_FRAMES_H */
