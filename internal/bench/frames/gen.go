// SPDX-License-Identifier: Apache-2.0

package frames

//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" fwd ../../../bpf/bench/fwd.bpf.c
