// SPDX-License-Identifier: Apache-2.0

// Package txmon makes visible the frames the kernel loses after an XDP
// redirect. bpf_redirect_map only queues a frame; the kernel may refuse
// the redirect (xdp_redirect_err) or the target driver the frame when the
// devmap is flushed (xdp_devmap_xmit), and the frame is then freed without
// being counted on any interface. The classic case is a veth whose peer
// has neither a native XDP program nor GRO on.
//
// A Monitor counts those losses from the xdp tracepoints (per CPU, no
// locks), optionally only for the interfaces it is given. CheckVethPeer
// tells, before any traffic, whether a veth's peer can take redirected
// frames, and names the command that fixes it when it cannot.
package txmon
