//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bench lab's server endpoint, attached to each real's interface: a
 * stateless TCP server in the manner of dperf, answering every segment
 * to its listen ports with XDP_TX.
 *
 *   SYN              -> SYN-ACK, whose sequence number is a cookie of the
 *                       4-tuple (no state is kept)
 *   request (data)   -> response of response_size bytes
 *   FIN              -> FIN-ACK
 *   ACK without data -> dropped (the handshake's or the close's last)
 *   RST              -> dropped
 *
 * Every sequence number is taken from what the client acknowledges, so
 * the server needs no state. In UDP mode it answers each datagram to its
 * ports with one of response_size bytes. Anything else goes to the kernel.
 */
#include "ep.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct ep_server_cfg {
	__u16 port_lo; /* listen ports: port_lo..port_hi */
	__u16 port_hi;
	__u16 response_size; /* response payload, bytes */
	__u8 udp;	     /* 1: answer UDP datagrams instead */
	__u8 pad;
	__u32 cookie_secret; /* keys the SYN-ACK cookie */
};

struct ep_server_stats {
	__u64 syns;	 /* SYN-ACKs sent */
	__u64 requests;	 /* responses sent */
	__u64 fins;	 /* FIN-ACKs sent */
	__u64 acks;	 /* ACKs without data, dropped */
	__u64 rsts;	 /* RSTs received */
	__u64 datagrams; /* UDP answers sent */
	__u64 errors;	 /* segments to the ports that could not be answered */
};

volatile struct ep_server_cfg ep_server_config;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_server_stats);
} ep_server_stats SEC(".maps");

/* cookie is the server's initial sequence number for a connection: a
 * mix of the 4-tuple and the secret, so that no state is needed. */
static __always_inline __u32 cookie(const struct ep_tuple *t)
{
	__u32 h = bpf_ntohl(t->saddr) * 0x9e3779b1u ^ bpf_ntohl(t->daddr);

	h ^= ((__u32)bpf_ntohs(t->sport) << 16 | bpf_ntohs(t->dport)) *
	     0x85ebca6bu;
	h ^= ep_server_config.cookie_secret;
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	return h;
}

static __always_inline int answer_tcp(struct xdp_md *ctx,
				      const struct ep_seg *s,
				      struct ep_server_stats *st)
{
	struct ep_tuple r;
	__u32 seq = s->ack, ack = s->seq + s->payload_len, len = 0;
	__u8 flags = EP_ACK;

	if (s->flags & EP_RST) {
		st->rsts++;
		return XDP_DROP;
	}
	if ((s->flags & (EP_SYN | EP_ACK)) == EP_SYN) {
		ep_reverse(s, &r);
		seq = cookie(&r);
		ack = s->seq + 1;
		flags = EP_SYN | EP_ACK;
		st->syns++;
	} else if (s->flags & EP_FIN) {
		ack++;
		flags = EP_FIN | EP_ACK;
		st->fins++;
	} else if (s->payload_len > 0) {
		len = ep_server_config.response_size;
		flags = EP_ACK | EP_PSH;
		st->requests++;
	} else {
		st->acks++;
		return XDP_DROP;
	}
	ep_reverse(s, &r);
	if (ep_write_tcp(ctx, &r, seq, ack, flags, len)) {
		st->errors++;
		return XDP_DROP;
	}
	return XDP_TX;
}

SEC("xdp")
int xdp_ep_server(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ep_server_stats *st;
	struct ep_tuple r;
	struct ep_seg s;
	__u32 zero = 0;
	__u16 port;

	if (ep_parse(data, data_end, &s))
		return XDP_PASS;
	port = bpf_ntohs(s.t.dport);
	if (port < ep_server_config.port_lo || port > ep_server_config.port_hi)
		return XDP_PASS;
	st = bpf_map_lookup_elem(&ep_server_stats, &zero);
	if (!st)
		return XDP_ABORTED;
	if (s.proto == IPPROTO_TCP && !ep_server_config.udp)
		return answer_tcp(ctx, &s, st);
	if (s.proto != IPPROTO_UDP || !ep_server_config.udp)
		return XDP_PASS;
	ep_reverse(&s, &r);
	if (ep_write_udp(ctx, &r, ep_server_config.response_size)) {
		st->errors++;
		return XDP_DROP;
	}
	st->datagrams++;
	return XDP_TX;
}

/*
 * xdp_pass passes everything to the kernel. The lab attaches it to the
 * balancer's interfaces when the DUT is the kernel itself (nftables):
 * veth delivers frames that its peer sends with XDP_TX (the endpoints'
 * answers) only when an XDP program runs on the receiving end. Real
 * NICs need no such thing.
 */
SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
