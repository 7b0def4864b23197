/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Connection sync: while the daemon streams this node's connections to
 * the other nodes of a cluster (xlb_sync_enabled), the data path tells it
 * which forward entries are new or changed state, by slot: the daemon
 * reads the entry from the mapped table and sends it. A lost event (the
 * ring full) is counted; the connection goes with the next refresh. */
#ifndef XLB_CT_SYNC_H
#define XLB_CT_SYNC_H

#include "maps.h"
#include "stats.h"

/* xlb_ct_sync_note queues the forward entry in slot of family's table.
 * A global function: the verifier checks it once, apart from the
 * packet's path. */
__attribute__((noinline)) int xlb_ct_sync_note(__u32 slot, __u32 family)
{
	struct ct_sync_event *ev;

	if (!xlb_sync_enabled)
		return 0;
	ev = bpf_ringbuf_reserve(&ct_sync_events, sizeof(*ev), 0);
	if (!ev) {
		count_event(EVENT_SYNC_LOST);
		return 0;
	}
	ev->slot = slot;
	ev->family = family;
	ev->pad[0] = 0;
	ev->pad[1] = 0;
	ev->pad[2] = 0;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

#endif /* XLB_CT_SYNC_H */
