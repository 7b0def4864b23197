// SPDX-License-Identifier: Apache-2.0

// Package daemon runs xlb as a service: it loads the data path (reusing
// pinned maps), attaches it to the configured interfaces, owns the VIPs and
// local IPs as host addresses, applies configurations as differences, and
// serves the API the CLI talks to.
//
// Every change, from a file (xlb apply, SIGHUP) or from the CLI, becomes a
// whole new configuration that is validated, compared with the one in
// force, and applied as the difference. A change that fails half way is
// rolled back to the configuration in force, so nothing is half applied.
package daemon
