// SPDX-License-Identifier: Apache-2.0

// Package frames holds the frame scenarios of `xlb bench`: pps,
// frame-sizes, rfc2544 (NDR and PDR searches) and multiflow (VSPERF's
// matrix). A trial sends the generator's frames through a DUT and counts
// them at the sinks on the reals, loss exact; this package runs the
// trials, records them, and writes their tables, CSV and charts. It also
// holds the bare XDP forwarder DUT (bpf/bench/fwd.bpf.c, compiled here by
// bpf2go).
package frames
