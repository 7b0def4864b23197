// SPDX-License-Identifier: Apache-2.0

package loadbalancer

// Limits are how many of each thing the data path's maps hold. The data
// path reports them from its maps' sizes (datapath.Datapath.Limits), so
// that a configuration is checked against them before anything changes;
// a limit of 0 is not checked.
type Limits struct {
	// Services is the number of services (XLB_MAX_SERVICES): the size of
	// the services map and of every per-service array.
	Services int
	// VIPs is the number of distinct VIP addresses (XLB_MAX_VIPS): what
	// the address filter holds beside the local IPs.
	VIPs int
	// Reals is the number of reals over all services (XLB_MAX_REALS).
	// Each real of each service is an entry: a server in two services
	// counts twice.
	Reals int
	// LocalIPs is the number of distinct local IPs the data path can
	// ever hold (max_local_ips, XLB_MAX_LADDRS by default). A local IP keeps its id after the last
	// service using it lets it go, since the replies of its connections
	// still need it, so every local IP used since the maps were created
	// counts.
	LocalIPs int
	// ConnTable are the connection tables' sizes: they are allocated
	// when the data path is loaded and keep their size while it runs.
	ConnTable ConnTableSizes
}

// The capacity for local IPs over all services (max_local_ips): the size
// of the maps indexed by local IP id, set when the data path is loaded.
const (
	DefaultLocalIPCapacity = 4096
	MinLocalIPCapacity     = 256
	MaxLocalIPCapacity     = 65536
)
