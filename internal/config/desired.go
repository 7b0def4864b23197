// SPDX-License-Identifier: Apache-2.0

package config

import (
	"github.com/xlb-dev/xlb/internal/datapath"
)

// Desired is a valid configuration in the data path's terms: what the
// data path should hold once the configuration is applied.
type Desired struct {
	// Interfaces are the interfaces to attach to, in the file's order.
	Interfaces []string
	// Mode is how XDP is attached.
	Mode datapath.AttachMode
	// Settings are datapath.DefaultSettings with the file's overrides.
	Settings datapath.Settings
	// Services are the services in the file's order.
	Services []datapath.Service
	// Reals holds every service's reals (an empty list for a service
	// without any).
	Reals map[datapath.ServiceKey][]datapath.Real
	// Health holds the health check of each service that has one, with
	// its defaults filled in.
	Health map[datapath.ServiceKey]HealthCheck
}

// Desired validates the configuration and converts it. Settings start
// from datapath.DefaultSettings and take the file's timeouts and local
// port range; a real without a weight gets 1. An invalid configuration
// returns the *ValidationError that Validate returns.
func (c *Config) Desired() (*Desired, error) {
	return c.check()
}
