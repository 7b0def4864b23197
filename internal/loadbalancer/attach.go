// SPDX-License-Identifier: Apache-2.0

package loadbalancer

// AttachMode selects how the balancer's XDP program is attached to an
// interface (the configuration's xdp_mode).
type AttachMode int

// Attach modes.
const (
	ModeNative  AttachMode = iota // in the driver (veth and most NICs)
	ModeGeneric                   // in the kernel's generic XDP hook (any device)
)

func (m AttachMode) String() string {
	if m == ModeGeneric {
		return "generic"
	}
	return "native"
}
