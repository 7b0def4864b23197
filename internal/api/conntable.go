// SPDX-License-Identifier: Apache-2.0

package api

import "time"

// ConnTable is how full one connection table is, what it refused and
// what it lost (one address family; Stats.ConnTables). docs/datapath.md,
// "Connection table", says how each figure is counted.
type ConnTable struct {
	Family string `json:"family"` // ipv4 | ipv6
	// MaxEntries is what the table is sized for: two entries for each
	// connection of its configured size.
	MaxEntries uint64 `json:"max_entries"`
	// Connections is the table's size (conn_table in the configuration)
	// and MemoryBytes the memory it takes, held from the start.
	Connections uint32 `json:"connections"`
	MemoryBytes uint64 `json:"memory_bytes"`
	// Entries is what the last walk of the table found: live entries and
	// expired ones whose slots no new entry has taken yet.
	Entries uint64 `json:"entries"`
	// LiveEntries estimates the entries within their timeout: the last
	// walk of the table (LiveCountedAt) plus the inserts since, minus the
	// removals since.
	LiveEntries uint64 `json:"live_entries"`
	// Occupancy is LiveEntries / MaxEntries, the figure the daemon warns
	// about above 0.9.
	Occupancy     float64    `json:"occupancy"`
	LiveCountedAt *time.Time `json:"live_counted_at,omitempty"`
	// Inserts and Removals count entries added (two per new connection)
	// and deleted by xlb (flushes, health checks' on_fail: reset).
	Inserts  uint64 `json:"inserts"`
	Removals uint64 `json:"removals"`
	// Refused counts new connections refused for want of a free slot
	// (the drop conn_table_full): the table never evicts a live one.
	Refused uint64 `json:"refused"`
	// HalfOpenDrops counts half-open connections (SYN seen, the client's
	// acknowledgement not, idle 2 s or more) whose place a new
	// connection took for want of a free slot.
	HalfOpenDrops uint64 `json:"half_open_drops"`
	// ReplyMisses counts replies to a local IP and port that found no
	// entry; ForwardMisses TCP segments other than a SYN to a service
	// that found none. Either means the table had lost the connection.
	ReplyMisses   uint64 `json:"reply_misses"`
	ForwardMisses uint64 `json:"forward_misses"`
}
