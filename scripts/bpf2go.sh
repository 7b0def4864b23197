#!/bin/sh
# bpf2go.sh: the one place for the compiler and flags every BPF object of
# xlb is built with. Each package's //go:generate line calls it with only
# what is its own (-type names, the ident, the C file, include dirs):
#
#	//go:generate ../../scripts/bpf2go.sh -type service xlb ../../bpf/xlb.bpf.c -- -I../../bpf
#
# bpf2go itself stays pinned in go.mod's tool block and runs as
# `go tool bpf2go` (STYLE.md habit 1). bpf2go could instead read the flags
# from $BPF2GO_CFLAGS set by the Makefile, but then a plain `go generate`
# (an editor, one package) would build with bpf2go's defaults and fail on
# a missing <asm/types.h>, or build other bytes; with this wrapper, `go
# generate` and `make generate` build the same objects.
#
# The committed objects are built with clang 14 (Debian clang 14.0.6):
# another major version emits other bytes, and `make check-generated`
# insists on 14. BPF2GO_CC overrides the compiler (the Makefile passes
# its BPF_CC).
set -eu

cc=${BPF2GO_CC:-clang-14}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "bpf2go.sh: $cc not found: install clang-14 (make deps) or set BPF2GO_CC" >&2
	exit 1
fi

# -I: <asm/types.h> lives in the multiarch include directory on Debian.
exec go tool bpf2go -tags linux -target bpfel -cc "$cc" \
	-cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" \
	"$@"
