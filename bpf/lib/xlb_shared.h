/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared by the XDP data path and its Go owner (internal/datapath).
 * bpf2go generates the Go mirror of every struct and enum here, so a field
 * changed here changes on both sides at once. Keep every struct free of
 * implicit padding: Go and C must agree on each byte.
 */
#ifndef XLB_SHARED_H
#define XLB_SHARED_H

/* Address families as stored in keys (not AF_* so the values fit a byte). */
enum xlb_family {
	XLB_AF_INET = 4,
	XLB_AF_INET6 = 6,
};

/* An IPv4 or IPv6 address in network byte order. IPv4 uses w[0] only and
 * keeps w[1..3] zero, so one key layout serves both families. */
struct xlb_addr {
	__be32 w[4];
};

/* services map key: one virtual service. port 0 matches every port. */
struct service_key {
	struct xlb_addr vip;
	__be16 port;
	__u8 proto;  /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family; /* enum xlb_family */
};

/* Schedulers. Every one of them indexes a table the control plane fills;
 * they differ in how the index is chosen. */
enum xlb_sched {
	XLB_SCHED_RR = 0,  /* per-CPU cursor over the list of live reals */
	XLB_SCHED_WRR = 1, /* per-CPU cursor over a smooth weighted sequence */
	XLB_SCHED_MH = 2,  /* Maglev table indexed by the 5-tuple hash */
	XLB_SCHED_SH = 3,  /* Maglev table indexed by the source address hash */
	XLB_SCHED_LC = 4,  /* as wrr, over weights the control plane derives
			    * from live connection counts every period */
	XLB_SCHED_WLC = 5, /* likewise, the counts divided by the weights */
};

/* local_addrs flags (an enum, not #defines, so the object's BTF carries
 * them to Go) */
enum xlb_addr_flags {
	XLB_ADDR_VIP = 0x1,   /* a service's VIP */
	XLB_ADDR_LADDR = 0x2, /* a FullNAT local IP */
};

/* local_addr_filter: 2^16 bits in 64-bit words, indexed by the top 16 bits
 * of (w0 ^ w1 ^ w2 ^ w3) * XLB_ADDR_FILTER_MULT over the address's words
 * as they lie in memory. Go computes the same function. */
#define XLB_ADDR_FILTER_WORDS 1024
#define XLB_ADDR_FILTER_MULT  0x9E3779B1u

/* The multiplier once more, as an enum the object's BTF carries (a #define
 * is invisible to bpf2go), so Go's copy is checked against it. */
enum xlb_addr_filter_consts {
	XLB_ADDR_FILTER_HASH_MULT = XLB_ADDR_FILTER_MULT,
};

#define XLB_MAX_SVC_LADDRS 256 /* local IPs one service can spread over */

/* services map value. */
struct service {
	__u32 id;	   /* index of the per-service arrays (stats, tables) */
	__u8 sched;	   /* enum xlb_sched */
	__u8 flags;	   /* XLB_SVC_F_* */
	__u16 laddr_count; /* valid entries of laddr_ids */
	__u8 persist_prefix;   /* clients sharing this prefix share a real */
	__u32 persist_timeout; /* seconds (ipvsadm -p); 0 = no persistence */
	__u32 laddr_ids[XLB_MAX_SVC_LADDRS]; /* indexes into laddrs */
};

/* service.flags: what a TCP service adds to its connections. A flag
 * applies to connections opened after it is set; a connection keeps what
 * it started with (its entry's CT_F_* flags). */
enum xlb_svc_flags {
	XLB_SVC_F_TOA = 0x1,	   /* the client's address in a TCP option */
	XLB_SVC_F_PROXY_V2 = 0x2,  /* a PROXY protocol v2 header first */
	XLB_SVC_F_SYN_PROXY = 0x4, /* SYN cookies before any state */
};

/* reals array value: one real server. port 0 keeps the client's port.
 * The data path reads addr, port and family. The rest is the control
 * plane's record of whose real it is, kept in the pinned map so that a
 * restarted daemon rebuilds its ids from it: connections name reals by
 * id, so a real must keep its id across restarts. */
struct real {
	struct xlb_addr addr;
	__be16 port;
	__u8 family;
	__u8 flags;   /* XLB_REAL_F_* */
	__u32 svc_id; /* the service the real belongs to, while in use */
	__u32 weight; /* its configured weight (0 = drained) */
};

/* real.flags */
enum xlb_real_flags {
	XLB_REAL_F_IN_USE = 0x1, /* a service has it; else a freed id */
	XLB_REAL_F_DOWN = 0x2, /* failed its health check: no new connections */
	/* its next hop is not resolved (XDP cannot resolve it): no new
	 * connections until the control plane sees it resolved */
	XLB_REAL_F_UNRESOLVED = 0x4,
};

/* laddrs array value: a local IP that FullNAT uses as the source towards
 * the reals. */
struct laddr {
	struct xlb_addr addr;
	__u8 family;
	__u8 pad[3];
};

/* persist map key: a service and a client prefix (the client address
 * with the bits past the service's persist_prefix cleared). */
struct persist_key {
	struct xlb_addr client;
	__u32 svc_id;
};

/* persist map value: the real the prefix's new connections go to, until
 * expires (connection-table clock, seconds). */
struct persist_entry {
	__u32 real_id;
	__u32 expires;
};

/* Connection states; each has its own timeout (xlb_svc_timeouts). */
enum ct_state {
	CT_SYN_SENT = 0,    /* TCP: SYN seen, handshake not complete */
	CT_ESTABLISHED = 1, /* TCP: handshake complete */
	CT_FIN = 2,	    /* TCP: FIN seen */
	CT_CLOSE = 3,	    /* TCP: RST seen */
	CT_UDP = 4,	    /* UDP flow */
	CT_STATE_MAX,
};

/* xlb_svc_timeouts element: the timeouts in force for a service, in
 * seconds, by enum ct_state. */
struct svc_timeouts {
	__u32 secs[CT_STATE_MAX];
};

/* ct_entry.flags */
enum ct_flags {
	CT_F_REVERSE = 0x1,   /* entry of the real -> local IP direction */
	CT_F_PERSIST = 0x2,   /* forward entry of a persistent service's flow */
	CT_F_USED = 0x4,      /* the slot holds or held an entry: a probe goes
			     * past it (a slot never used ends a probe) */
	CT_F_BUSY = 0x8,      /* a CPU that claimed the slot is writing it: no
			     * lookup matches it until the flag clears */
	CT_F_TOA = 0x10,      /* the client's address goes to the real in TOA */
	CT_F_PROXY = 0x20,    /* ... in a PROXY v2 header (sequence shifted) */
	CT_F_SYNPROXY = 0x40, /* opened by the SYN proxy: sequence numbers
			       * differ between the two handshakes */
};

/* Connection-table keys, one table per family so IPv4 slots stay one
 * cache line (10M connections must fit 2 GiB). Forward: {client, vip,
 * cport, vport}; reverse: {real, laddr, rport, lport}. Padding is zero:
 * keys are compared as whole 64-bit words. */
struct ct4_key {
	__be32 src;
	__be32 dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct ct6_key {
	__be32 src[4];
	__be32 dst[4];
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

/* What every slot begins with (16 bytes): the entry of one direction of a
 * connection. Both directions say what the packet's peer address becomes:
 * forward entries replace the source with the local IP and port, reverse
 * entries replace the destination with the client's. The other side comes
 * from reals[real_id] (forward) or svc_vips[svc_id] (reverse). The first 8
 * bytes are one word to the data path: a CPU claims a slot by swapping it
 * (compare-and-swap) and publishes the entry by writing it last. */
struct ct_entry {
	__u32 last_seen; /* seconds of the monotonic clock */
	__u8 state;	 /* enum ct_state */
	__u8 flags;	 /* CT_F_* */
	__u16 svc_id;
	__u16 real_id;
	__be16 port; /* forward: local port; reverse: client port */
	__u32 peer;  /* slot of the connection's entry of the other direction */
};

/* Per-connection room for what later features keep; zero until then. A
 * slot's layout is stamped (internal/datapath/layout.go): a field added
 * or renamed here makes every pinned table incompatible, so later fields
 * take a slot's reserved words, through accessors (ct_table.h). */
struct ct_ext {
	__u32 seq_delta;  /* SYN proxy: sequence-number offset */
	__u16 owner_node; /* connection sync: the node that made the entry */
	__u8 hdr_state;	  /* TOA / PROXY v2: enum ct_hdr_state */
	__u8 pad;
};

/* A connection's forward entry is new or changed state: what the data
 * path tells the daemon while it syncs connections to other nodes (the
 * ct_sync_events ring). The daemon reads the entry from the slot. */
struct ct_sync_event {
	__u32 slot;
	__u8 family; /* XLB_AF_INET or XLB_AF_INET6: which table */
	__u8 pad[3];
};

/* ct_ext.hdr_state of a TOA, PROXY v2 or SYN-proxied connection. */
enum ct_hdr_state {
	CT_HDR_WAIT = 0,   /* TOA: the real's SYN-ACK not seen yet */
	CT_HDR_ARMED = 1,  /* TOA: hdr_seq known; PROXY v2: header not acked */
	CT_HDR_ACKED = 2,  /* PROXY v2: the real acked the header */
	CT_HDR_REOPEN = 3, /* SYN proxy: the closing connection's port got a
			    * new SYN, answered with a cookie: an ACK that
			    * returns one opens the new connection */
};

/* One IPv4 slot: one 64-byte cache line (the map is BPF_F_MMAPABLE, so
 * its values start page aligned and no slot straddles two lines). */
struct ct4_slot {
	struct ct_entry ct; /*  0: 16 bytes */
	struct ct4_key key; /* 16: 16 bytes */
	__be32 addr4;	    /* 32: forward: local IPv4; reverse: client */
	__u32 pad;	    /* 36 */
	struct ct_ext ext;  /* 40: 8 bytes */
	__u32 reserved[4]; /* 48: 16 bytes; [0]: ct_hdr_seq_of, the rest zero */
};

/* One IPv6 slot: two cache lines, one 128-byte pair. */
struct ct6_slot {
	struct ct_entry ct; /*  0: 16 bytes */
	struct ct6_key key; /* 16: 40 bytes */
	__be32 addr6[4];    /* 56: forward: local IPv6; reverse: client */
	struct ct_ext ext;  /* 72: 8 bytes */
	__u32 reserved
		[12]; /* 80: 48 bytes; [0]: ct_hdr_seq_of, the rest zero */
};

/* Per-service and per-real counters (per CPU, summed by Go). "in" is the
 * client -> real direction, "out" the reply direction, as in ipvsadm. */
struct xlb_counters {
	__u64 conns;
	__u64 in_packets;
	__u64 in_bytes;
	__u64 out_packets;
	__u64 out_bytes;
};

/* Why a packet was dropped; index of drop_stats. */
enum xlb_drop_reason {
	DROP_ETH_TRUNCATED = 0, /* frame shorter than its L2 headers */
	DROP_IP_TRUNCATED = 1,	/* IP header beyond the frame */
	DROP_IP_VERSION = 2,	/* version field disagrees with ethertype */
	DROP_IP_IHL = 3,	/* IPv4 IHL < 5 */
	DROP_IP_LENGTH = 4,	/* IP total/payload length beyond the frame */
	DROP_FRAGMENT = 5,	/* IP fragment aimed at a VIP */
	DROP_IPV6_EXTHDR = 6,	/* unsupported IPv6 extension header to a VIP */
	DROP_L4_TRUNCATED = 7,	/* TCP/UDP/ICMP header beyond the frame */
	DROP_TCP_DOFF = 8,	/* TCP data offset < 5 or beyond the frame */
	DROP_TTL_EXPIRED = 9,	/* TTL or hop limit would reach zero */
	DROP_NO_REAL = 10,	/* service has no schedulable real */
	DROP_NO_LADDR = 11,	/* FullNAT service without a usable local IP */
	DROP_NO_LPORT =
		12, /* every local port probed is held towards the real */
	DROP_CONN_TABLE_FULL =
		13,    /* no free slot for a new connection's entries */
	DROP_FIB = 14, /* no route, or its interface is not attached */
	DROP_UDP_CSUM_ZERO = 15, /* UDP over IPv6 without checksum */
	DROP_ICMP_INNER = 16,	 /* ICMP error quoting a malformed packet */
	DROP_NO_NEIGH = 17,	 /* next hop not resolved: the daemon is told */
	DROP_TCP_NOT_SYN = 18, /* TCP segment other than a SYN, no connection */
	DROP_UDP_LENGTH = 19,  /* UDP length < 8 or beyond the IP payload */
	DROP_FRAG_NEEDED = 20, /* above the egress MTU, IPv4 without DF */
	DROP_TOO_BIG = 21, /* above the egress MTU, ICMP error rate-limited */
	DROP_HEADER_SPLIT = 22, /* headers run past a frame's first buffer */
	DROP_SYNCOOKIE_INVALID = 23, /* SYN proxy: an ACK without a valid
				      * cookie and no connection */
	DROP_SYNPROXY_EARLY = 24,    /* SYN proxy: a client segment before the
				   * real answered, not kept (sent again) */
	DROP_REASON_MAX,
};

/* What the data path did besides forwarding; index of event_stats. */
enum xlb_event {
	EVENT_ICMP_TOO_BIG = 0,	  /* ICMP frag needed / packet too big sent */
	EVENT_TOA_ADDED = 1,	  /* a TOA option added to a client's segment */
	EVENT_TOA_NO_ROOM = 2,	  /* ... not added: its TCP options were full */
	EVENT_PROXY_HDR_SENT = 3, /* a PROXY v2 header put ahead of a
				   * client's first byte (again when that
				   * segment was retransmitted) */
	EVENT_MSS_LOWERED = 4,	  /* a real's SYN-ACK MSS lowered for them */
	EVENT_SYNCOOKIE_SENT = 5, /* SYN proxy: a SYN answered with a cookie */
	EVENT_SYNCOOKIE_VALID = 6, /* ... an ACK returned a valid cookie: the
				    * connection is made, a SYN to the real */
	EVENT_SYNPROXY_OPENED = 7, /* ... the real answered: both handshakes
				    * joined */
	EVENT_SYNPROXY_EARLY_KEPT = 8, /* ... client data kept until then */
	EVENT_SYNC_LOST = 9, /* connection sync: an event the full ring lost
			      * (the connection goes at the next refresh) */
	EVENT_MAX,
};

#define XLB_EVENT_SLOTS 16 /* event_stats slots, room to grow pinned */

/* Connection-table counters of one family; index of ct_stats, IPv6 ones
 * XLB_CT_STAT_FAMILY_SLOTS further. The data path counts the first three
 * and CT_STAT_FULL. The Go owner counts what it adds and deletes itself in
 * slots the data path never touches, so its writes lose no CPU's
 * increment. How full a table is comes from walking it (the data path
 * reuses expired slots without counting them); the misses tell when a
 * connection was lost, the refusals when the table was full:
 * docs/datapath.md. */
enum xlb_ct_stat {
	CT_STAT_INSERTS = 0,	  /* entries the data path added */
	CT_STAT_MISS_REPLY = 1,	  /* packet to a local IP's port range found
				   * no entry: a reply whose connection is gone */
	CT_STAT_MISS_FORWARD = 2, /* TCP non-SYN to a service found no entry */
	CT_STAT_CP_INSERTS = 3,	  /* entries the control plane added */
	CT_STAT_CP_REMOVALS = 4,  /* entries the control plane deleted */
	CT_STAT_FULL = 5,	  /* new connections refused: no free slot
				   * (also the drop conn_table_full) */
	CT_STAT_HALF_OPEN_DROPS = 6, /* stale half-open connections whose
				      * place a new one took */
	CT_STAT_MAX,
};

/* The stages of a new connection that xlb bench datapath times (index of
 * xlb_stage_ns, lib/stages.h). Each is the time since the previous
 * stage ended. */
enum xlb_stage {
	XLB_STAGE_LOOKUP = 0,	/* entry to new_connection: parse, service,
				 * the forward probe that missed */
	XLB_STAGE_TIMER = 1,	/* one reading of the clock: the overhead
				 * in every other stage's figure */
	XLB_STAGE_SCHEDULE = 2, /* scheduler (and persistence): the real */
	XLB_STAGE_FWD_SLOT = 3, /* local IP, and the forward entry's slot */
	XLB_STAGE_PORT = 4,	/* local port and the reverse entry's slot */
	XLB_STAGE_INSERT = 5,	/* both entries written, counters */
	XLB_STAGE_SEND = 6,	/* NAT, checksums, route, redirect */
	XLB_STAGE_CONNS = 7,	/* not a time: connections timed */
	XLB_STAGE_MAX,
};

/* ct_stats slots of one family, room to grow pinned (the map holds two
 * families' worth). */
#define XLB_CT_STAT_FAMILY_SLOTS 8

/* drop_stats slots: more than there are reasons, so that a new reason
 * does not change the pinned map's size. */
#define XLB_DROP_SLOTS 64

/* Runtime settings, a global variable the Go owner writes. */
struct xlb_config {
	__u16 lport_min; /* local port range, inclusive */
	__u16 lport_max;
	__u32 ncpus;	     /* CPUs the local port range is split over */
	__u32 fib_cache_ttl; /* seconds a next hop is reused; 0 = no cache */
	/* slots of the IPv4 and IPv6 connection tables whose hash homes are
	 * spread over (even; each map holds XLB_CT_PROBE slots more) */
	__u32 ct4_slots;
	__u32 ct6_slots;
};

/* fib_cache key and value: the next hop towards one destination. */
struct fib_cache_key {
	struct xlb_addr dst;
	__u32 family;
};

struct fib_cache_entry {
	__u32 ifindex;
	__u32 expires; /* connection-table clock, seconds */
	__u8 smac[6];
	__u8 dmac[6];
	__u32 mtu; /* of the route: larger packets get an ICMP error */
};

/* neigh_requests record: a next hop bpf_fib_lookup found no neighbour
 * entry for. XDP cannot resolve it; the daemon does, so that the
 * sender's retransmission goes through. */
struct neigh_request {
	struct xlb_addr addr; /* the gateway, or the destination on-link */
	__u32 ifindex;	      /* the egress interface */
	__u8 family;	      /* enum xlb_family */
	__u8 pad[3];
};

/* drop_samples record: a dropped frame, sampled while someone listens
 * (xlb drops --follow). The control plane parses the headers. */
enum xlb_drop_sample_consts {
	XLB_DROP_SAMPLE_BYTES = 128, /* of the frame, from its start */
};

struct drop_sample {
	__u64 ns;      /* bpf_ktime_get_ns() */
	__u32 ifindex; /* the interface it came in by */
	__u32 cpu;
	__u32 len;    /* the frame's length, all its buffers */
	__u16 caplen; /* bytes in data */
	__u8 reason;  /* enum xlb_drop_reason */
	__u8 pad;
	__u8 data[XLB_DROP_SAMPLE_BYTES];
};

#endif /* XLB_SHARED_H */
