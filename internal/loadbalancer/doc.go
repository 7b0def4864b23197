// SPDX-License-Identifier: Apache-2.0

// Package loadbalancer is xlb's load-balancer model: virtual services and
// their real servers, schedulers, protocols, runtime settings, and the
// status, counters and connections the data path reports about them.
//
// It holds plain types and their validation and knows nothing of BPF, as
// Cilium keeps pkg/loadbalancer apart from its map code. The datapath
// package translates the model to maps; config, the API, the listings and
// the daemon speak in its types.
package loadbalancer
