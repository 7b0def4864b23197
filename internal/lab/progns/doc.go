// SPDX-License-Identifier: Apache-2.0

// Package progns builds the network namespace in which xlb's data path
// runs under BPF_PROG_RUN, for its packet tests (internal/datapath) and
// its per-packet cost measurement (internal/lab/bench/dpcost): the balancer's
// client-side interface and real-side interface, each a veth, with
// permanent neighbours for the client and the reals, so that
// bpf_fib_lookup resolves every destination without sending anything.
// Every run happens on one thread inside the namespace, pinned to CPU 0,
// so per-CPU state is that of one CPU.
//
// The package knows the addresses and the namespace, not the data path:
// the caller loads the program and its maps.
package progns
