// SPDX-License-Identifier: Apache-2.0

package config

import (
	"net/netip"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// Desired is a valid configuration in the data path's terms: what the
// data path should hold once the configuration is applied.
type Desired struct {
	// Interfaces are the interfaces to attach to, in the file's order.
	Interfaces []string
	// Mode is how XDP is attached.
	Mode loadbalancer.AttachMode
	// Workers are the worker CPUs (none: the program runs where frames
	// are received).
	Workers loadbalancer.Workers
	// Settings are loadbalancer.DefaultSettings with the file's overrides.
	Settings loadbalancer.Settings
	// ConnTable are the connection tables' sizes, the defaults filled in.
	ConnTable loadbalancer.ConnTableSizes
	// ServiceCapacity, RealCapacity and LocalIPCapacity are how many
	// services, reals and local IPs the data path holds (max_services,
	// max_reals, max_local_ips, the defaults filled in).
	ServiceCapacity, RealCapacity, LocalIPCapacity int
	// Services are the services in the file's order.
	Services []loadbalancer.Service
	// Reals holds every service's reals (an empty list for a service
	// without any).
	Reals map[loadbalancer.ServiceKey][]loadbalancer.Real
	// Health holds the health check of each service that has one, with
	// its defaults filled in (an exec check's user and group included).
	Health map[loadbalancer.ServiceKey]HealthCheck
	// MaxExecRunning bounds the exec check commands running at once.
	MaxExecRunning int
	// Node is the node section (its zero value without one).
	Node NodeSettings
	// Cluster is the cluster section, nil without one.
	Cluster *ClusterSettings
	// Communities are the BGP communities of each VIP's announcement:
	// node.bgp.communities and those of every service of the VIP.
	Communities map[netip.Addr][]uint32
}

// Desired validates the configuration and converts it. Settings start
// from loadbalancer.DefaultSettings and take the file's timeouts and local
// port range; a real without a weight gets 1. An invalid configuration
// returns the *ValidationError that Validate returns.
func (c *Config) Desired() (*Desired, error) {
	return c.check(Env{})
}
