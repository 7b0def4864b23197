//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bench lab's client endpoint: a minimal TCP client in the manner of
 * dperf, in two programs that share one table of connection slots.
 *
 * xdp_ep_send runs through BPF_PROG_RUN in live-frames mode, paced by
 * pace.h, one sender per CPU over its own range of slots. Its job is
 *   OPEN: open the next slot's connection (a SYN);
 *   TICK: visit the next slot: send the keepalive request that is due,
 *         retransmit what timed out, give up after max_retries;
 *   CLOSE: send FIN on the next slot's idle connection.
 * xdp_ep_client is attached to the client's interface and answers:
 *   SYN-ACK        -> ACK with the request (request_size bytes)
 *   response       -> FIN, or with keepalive nothing (TICK sends the next
 *                     request) or, with keepalive_ns 0, the next request
 *                     at once (one request at a time: TCP_RR) until
 *                     b2b_stop_ns, so that the ping-pong ends by itself
 *   FIN-ACK        -> the last ACK; the slot is free again
 *   RST            -> counted; the slot is free again
 * A slot is a client address and port: slot = address index * n_ports +
 * port index. Handshake and request/response times go to histograms.
 */
#include "ep.h"
#include "pace.h"
#include "../lib/steer.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum ep_state {
	EP_FREE = 0,
	EP_SYN_SENT,
	EP_REQ_SENT,
	EP_IDLE, /* established, keepalive, between requests */
	EP_FIN_SENT,
};

enum ep_job {
	EP_JOB_OPEN = 0,
	EP_JOB_TICK,
	EP_JOB_CLOSE,
};

enum ep_hist_kind {
	EP_HIST_HANDSHAKE = 0, /* SYN to SYN-ACK */
	EP_HIST_RESPONSE,      /* request to response */
	EP_HIST_KINDS,
};

struct ep_client_cfg {
	struct ep_tuple first; /* slot 0's segments: addresses, ports, MACs */
	__u32 slots;	       /* connection slots */
	__u16 n_ports;	       /* client ports per client address */
	__u16 request_size;    /* request payload, bytes */
	__u64 keepalive_ns;    /* between requests; 0: back to back */
	__u64 rto_ns;	       /* retransmission timeout */
	__u64 b2b_stop_ns;     /* back-to-back requests stop at this time */
	__u8 keepalive;	       /* 1: keep connections open */
	__u8 job;	       /* enum ep_job, for xdp_ep_send */
	__u8 max_retries;      /* retransmissions before a timeout */
	__u8 pad[5];
};

struct ep_client_stats {
	__u64 attempted;      /* SYNs of new connections */
	__u64 established;    /* SYN-ACKs accepted */
	__u64 closed;	      /* FIN-ACKs accepted: connections done */
	__u64 requests;	      /* requests sent (not counting retransmissions) */
	__u64 responses;      /* responses accepted */
	__u64 rsts;	      /* RSTs received */
	__u64 timeouts;	      /* connections given up after max_retries */
	__u64 retransmits;    /* segments sent again after rto_ns */
	__u64 busy;	      /* OPEN found its slot still in use: none sent */
	__u64 unexpected;     /* segments that fit no slot's state */
	__u64 response_bytes; /* payload bytes of the responses */
};

/* struct ep_conn is a connection slot. */
struct ep_conn {
	__u64 sent_ns; /* the last transmission: timer and histograms */
	__u32 snd_nxt; /* the client's next sequence number */
	__u32 rcv_nxt; /* the server's next sequence number */
	__u8 state;    /* enum ep_state */
	__u8 retries;  /* retransmissions of the segment in flight */
	__u8 pad[6];
};

/* per-CPU sender: its pacing and its range of slots */
struct ep_sender {
	struct pace pace;
	__u32 next; /* the next slot to visit */
	__u32 lo;   /* its slots are lo..hi-1 */
	__u32 hi;
	__u32 pad;
};

struct ep_hist {
	__u64 count[EP_HIST_BUCKETS];
};

volatile struct ep_client_cfg ep_client_config;

/* the connection slots; Go sizes the array to the slots before loading */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_conn);
} ep_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_client_stats);
} ep_client_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_sender);
} ep_senders SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EP_HIST_KINDS);
	__type(key, __u32);
	__type(value, struct ep_hist);
} ep_hists SEC(".maps");

static __always_inline struct ep_client_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ep_client_stats, &zero);
}

static __always_inline void record(__u32 kind, __u64 ns)
{
	struct ep_hist *h = bpf_map_lookup_elem(&ep_hists, &kind);
	__u64 b = ep_hist_bucket(ns);

	/* the bound again, where the verifier sees it */
	asm volatile("" : "+r"(b));
	if (h && b < EP_HIST_BUCKETS)
		h->count[b]++;
}

/* slot_tuple is the client-to-server tuple of a slot. */
static __always_inline void slot_tuple(__u32 slot, struct ep_tuple *t)
{
	__u32 n_ports = ep_client_config.n_ports ?: 1;

	__builtin_memcpy(t, (void *)&ep_client_config.first, sizeof(*t));
	t->saddr = bpf_htonl(bpf_ntohl(t->saddr) + slot / n_ports);
	t->sport = bpf_htons(bpf_ntohs(t->sport) + slot % n_ports);
}

/* slot_of is the slot an answer to the client belongs to, or -1. */
static __always_inline long slot_of(const struct ep_seg *s)
{
	__u32 n_ports = ep_client_config.n_ports ?: 1;
	__u32 addr =
		bpf_ntohl(s->t.daddr) - bpf_ntohl(ep_client_config.first.saddr);
	__u32 port =
		bpf_ntohs(s->t.dport) - bpf_ntohs(ep_client_config.first.sport);
	__u32 slot;

	if (s->t.saddr != ep_client_config.first.daddr ||
	    s->t.sport != ep_client_config.first.dport || port >= n_ports ||
	    addr >= ep_client_config.slots / n_ports + 1)
		return -1;
	slot = addr * n_ports + port;
	return slot < ep_client_config.slots ? slot : -1;
}

/* send_request sends c's next request and moves it to EP_REQ_SENT. */
static __always_inline int send_request(struct xdp_md *ctx,
					const struct ep_tuple *t,
					struct ep_conn *c, __u64 now)
{
	__u32 len = ep_client_config.request_size;

	if (ep_write_tcp(ctx, t, c->snd_nxt, c->rcv_nxt, EP_ACK | EP_PSH, len))
		return XDP_ABORTED;
	c->snd_nxt += len;
	c->state = EP_REQ_SENT;
	c->sent_ns = now;
	c->retries = 0;
	return XDP_TX;
}

static __always_inline int send_fin(struct xdp_md *ctx,
				    const struct ep_tuple *t, struct ep_conn *c,
				    __u64 now)
{
	if (ep_write_tcp(ctx, t, c->snd_nxt, c->rcv_nxt, EP_FIN | EP_ACK, 0))
		return XDP_ABORTED;
	c->snd_nxt++;
	c->state = EP_FIN_SENT;
	c->sent_ns = now;
	c->retries = 0;
	return XDP_TX;
}

/* answer handles a segment from the server to connection c. */
static __always_inline int answer(struct xdp_md *ctx, const struct ep_seg *s,
				  struct ep_conn *c, struct ep_client_stats *st)
{
	__u64 now = bpf_ktime_get_ns();
	struct ep_tuple r;

	ep_reverse(s, &r);
	if (s->flags & EP_RST) {
		st->rsts++;
		c->state = EP_FREE;
		return XDP_DROP;
	}
	switch (c->state) {
	case EP_SYN_SENT:
		if ((s->flags & (EP_SYN | EP_ACK)) != (EP_SYN | EP_ACK) ||
		    s->ack != c->snd_nxt)
			break;
		record(EP_HIST_HANDSHAKE, now - c->sent_ns);
		st->established++;
		st->requests++;
		c->rcv_nxt = s->seq + 1;
		return send_request(ctx, &r, c, now);
	case EP_REQ_SENT:
		if (s->payload_len == 0 || s->seq != c->rcv_nxt ||
		    s->ack != c->snd_nxt || (s->flags & EP_SYN))
			break;
		record(EP_HIST_RESPONSE, now - c->sent_ns);
		st->responses++;
		st->response_bytes += s->payload_len;
		c->rcv_nxt += s->payload_len;
		if (!ep_client_config.keepalive)
			return send_fin(ctx, &r, c, now);
		if (ep_client_config.keepalive_ns == 0 &&
		    now < ep_client_config.b2b_stop_ns) {
			st->requests++;
			return send_request(ctx, &r, c, now);
		}
		c->state = EP_IDLE;
		c->sent_ns = now;
		return XDP_DROP;
	case EP_FIN_SENT:
		if (!(s->flags & EP_FIN) || s->ack != c->snd_nxt)
			break;
		st->closed++;
		c->state = EP_FREE;
		if (ep_write_tcp(ctx, &r, c->snd_nxt, s->seq + 1, EP_ACK, 0))
			return XDP_ABORTED;
		return XDP_TX;
	}
	st->unexpected++;
	return XDP_DROP;
}

static __always_inline int ep_client_answer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ep_client_stats *st;
	struct ep_conn *c;
	struct ep_seg s;
	__u32 slot;
	long found;

	if (ep_parse(data, data_end, &s) || s.proto != IPPROTO_TCP)
		return XDP_PASS;
	found = slot_of(&s);
	if (found < 0)
		return XDP_PASS;
	slot = found;
	c = bpf_map_lookup_elem(&ep_conns, &slot);
	st = stats();
	if (!c || !st)
		return XDP_ABORTED;
	return answer(ctx, &s, c, st);
}

/* open_conn sends the SYN of a new connection in slot. */
static __always_inline int open_conn(struct xdp_md *ctx, struct ep_conn *c,
				     const struct ep_tuple *t, __u64 now,
				     struct ep_client_stats *st)
{
	__u32 isn = bpf_get_prandom_u32();

	if (c->state != EP_FREE) {
		st->busy++;
		return XDP_DROP;
	}
	if (ep_write_tcp(ctx, t, isn, 0, EP_SYN, 0))
		return XDP_ABORTED;
	c->snd_nxt = isn + 1;
	c->rcv_nxt = 0;
	c->state = EP_SYN_SENT;
	c->sent_ns = now;
	c->retries = 0;
	st->attempted++;
	return XDP_TX;
}

/* retransmit sends c's segment in flight again, or gives c up. */
static __always_inline int retransmit(struct xdp_md *ctx, struct ep_conn *c,
				      const struct ep_tuple *t, __u64 now,
				      struct ep_client_stats *st)
{
	__u32 seq = c->snd_nxt - 1, ack = c->rcv_nxt, len = 0;
	__u8 flags = EP_FIN | EP_ACK;

	if (c->retries >= ep_client_config.max_retries) {
		st->timeouts++;
		c->state = EP_FREE;
		return XDP_DROP;
	}
	if (c->state == EP_SYN_SENT) {
		ack = 0;
		flags = EP_SYN;
	} else if (c->state == EP_REQ_SENT) {
		len = ep_client_config.request_size;
		seq = c->snd_nxt - len;
		flags = EP_ACK | EP_PSH;
	}
	if (ep_write_tcp(ctx, t, seq, ack, flags, len))
		return XDP_ABORTED;
	c->retries++;
	c->sent_ns = now;
	st->retransmits++;
	return XDP_TX;
}

/* tick does what a slot's timer asks for: the keepalive request that is
 * due, a retransmission, nothing. */
static __always_inline int tick(struct xdp_md *ctx, struct ep_conn *c,
				const struct ep_tuple *t, __u64 now,
				struct ep_client_stats *st)
{
	__u64 age = now - c->sent_ns;

	switch (c->state) {
	case EP_IDLE:
		if (age < ep_client_config.keepalive_ns)
			return XDP_DROP;
		st->requests++;
		return send_request(ctx, t, c, now);
	case EP_SYN_SENT:
	case EP_REQ_SENT:
	case EP_FIN_SENT:
		if (age < ep_client_config.rto_ns)
			return XDP_DROP;
		return retransmit(ctx, c, t, now, st);
	}
	return XDP_DROP;
}

SEC("xdp")
int xdp_ep_send(struct xdp_md *ctx)
{
	struct ep_client_stats *st = stats();
	struct ep_sender *snd;
	struct ep_tuple t;
	struct ep_conn *c;
	__u32 zero = 0, slot;
	__u64 now;

	snd = bpf_map_lookup_elem(&ep_senders, &zero);
	if (!snd || !st)
		return XDP_ABORTED;
	if (!pace_due(&snd->pace))
		return XDP_DROP;
	slot = snd->next;
	snd->next = slot + 1 >= snd->hi ? snd->lo : slot + 1;
	c = bpf_map_lookup_elem(&ep_conns, &slot);
	if (!c)
		return XDP_ABORTED;
	slot_tuple(slot, &t);
	now = bpf_ktime_get_ns();
	switch (ep_client_config.job) {
	case EP_JOB_OPEN:
		return open_conn(ctx, c, &t, now, st);
	case EP_JOB_TICK:
		return tick(ctx, c, &t, now, st);
	case EP_JOB_CLOSE:
		if (c->state != EP_IDLE)
			return XDP_DROP;
		return send_fin(ctx, &t, c, now);
	}
	return XDP_ABORTED;
}

SEC("xdp")
int xdp_ep_client(struct xdp_md *ctx)
{
	return ep_client_answer(ctx);
}

/* xdp_ep_client_worker is xdp_ep_client for a cpumap entry, which takes
 * no XDP_TX: an answer leaves by a redirect to the interface the frame
 * came in on. */
SEC("xdp")
int xdp_ep_client_worker(struct xdp_md *ctx)
{
	int verdict = ep_client_answer(ctx);

	if (verdict == XDP_TX)
		return bpf_redirect(ctx->ingress_ifindex, 0);
	return verdict;
}

/* xdp_ep_client_steer is attached instead of xdp_ep_client when the DUT
 * runs its data path on worker CPUs: answers then arrive on a worker's
 * CPU, and a slot must be touched by one CPU only, its sender's, as on
 * a NIC whose RSS returns a flow to the core that opened it (dperf).
 * It hands every frame to the sender's CPU, whose cpumap entry runs
 * xdp_ep_client_worker (lib/steer.h). */
SEC("xdp")
int xdp_ep_client_steer(struct xdp_md *ctx)
{
	return steer(ctx);
}
