#!/bin/sh
# Installs, on Debian or Ubuntu as root, everything xlb's build and tests
# need. Idempotent: packages already present are left alone.
set -eu

PACKAGES="clang llvm libbpf-dev bpftool iproute2 clang-format make git ca-certificates"
GO_MIN=1.24

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: run as root (installs Debian packages)" >&2
	exit 1
fi

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deps.sh: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Go: the machine's own if recent enough, else Debian's golang package.
if ! command -v go >/dev/null 2>&1; then
	[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v go >/dev/null 2>&1; then
	echo "deps.sh: installing golang from Debian"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang >/dev/null
fi
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$GO_MIN" "$have" | sort -V | head -n1)" != "$GO_MIN" ]; then
	echo "deps.sh: Go $have is older than $GO_MIN; go.mod's toolchain line fetches a newer one" >&2
fi

# bpffs: the daemon pins maps there; tests that pin use their own dirs.
if ! mount | grep -q ' /sys/fs/bpf type bpf'; then
	mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
fi

go mod download
echo "deps.sh: ready"
