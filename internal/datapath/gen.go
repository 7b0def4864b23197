// SPDX-License-Identifier: Apache-2.0

package datapath

//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -type xlb_addr -type service_key -type service -type real -type laddr -type ct4_key -type ct6_key -type ct_entry -type ct6_entry -type xlb_counters -type fib_cache_key -type fib_cache_entry -type neigh_request xlb ../../bpf/xlb.bpf.c -- -I../../bpf
