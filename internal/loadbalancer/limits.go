// SPDX-License-Identifier: Apache-2.0

package loadbalancer

// Limits are how many of each thing the data path's maps hold. The data
// path reports them from its maps' sizes (datapath.Datapath.Limits), so
// that a configuration is checked against them before anything changes;
// a limit of 0 is not checked.
type Limits struct {
	// Services is the number of services (max_services,
	// XLB_MAX_SERVICES by default): the size of the services map and of
	// every per-service array.
	Services int
	// VIPs is the number of distinct VIP addresses: what the address
	// filter holds beside the local IPs, one per service.
	VIPs int
	// Reals is the number of reals over all services (max_reals,
	// XLB_MAX_REALS by default). Each real of each service is an entry: a
	// server in two services counts twice.
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

// The capacities for services (max_services) and for reals over all
// services (max_reals): the sizes of the maps indexed by their ids, set
// when the data path is loaded. A connection entry keeps 16 bits of each
// id, hence the maximum.
const (
	DefaultServiceCapacity = 1024
	MinServiceCapacity     = 16
	MaxServiceCapacity     = 65536
	DefaultRealCapacity    = 16384
	MinRealCapacity        = 16
	MaxRealCapacity        = 65536
)

// The capacity for local IPs over all services (max_local_ips): the size
// of the maps indexed by local IP id, set when the data path is loaded.
const (
	DefaultLocalIPCapacity = 4096
	MinLocalIPCapacity     = 256
	MaxLocalIPCapacity     = 65536
)
