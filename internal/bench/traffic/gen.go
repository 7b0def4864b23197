// SPDX-License-Identifier: Apache-2.0

package traffic

//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" gen ../../../bpf/bench/gen.bpf.c
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" sink ../../../bpf/bench/sink.bpf.c
