#!/bin/sh
# Installs, on Debian or Ubuntu as root, everything xlb's build and tests
# need. Idempotent: packages already present are left alone, and when
# everything is there it does nothing over the network.
set -eu

# prometheus for promtool (the alert rules' checks) and chromium for the
# live page's browser test. clang-14/llvm-14 by name: the committed BPF
# objects are built with Debian
# clang 14.0.6 and `make check-generated` needs that major version (the
# Makefile's BPF_CC). The bench lab's real clients and servers (xlb bench
# latency, redis, http, throughput) come after the build tools; frr is the
# cluster lab's router and bird2 checks the operator guide's BIRD example;
# linux-perf records xlb bench --profile's flame graphs.
PACKAGES="clang-14 llvm-14 libbpf-dev bpftool iproute2 ethtool util-linux nftables conntrack clang-format make git ca-certificates prometheus chromium
	iperf3 redis-server redis-tools wrk nginx-light haproxy sockperf frr bird2 linux-perf"

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
	# nginx, redis-server, haproxy, frr and bird2 are run by the labs
	# inside their namespaces: their packages must not start host services.
	policy=/usr/sbin/policy-rc.d
	own_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
	[ -z "$own_policy" ] || rm -f "$policy"
fi

# Go >= 1.26 (golang.org/x/sys needs it). Debian 12 ships 1.19: when no recent
# Go is found, Debian's is used only to fetch the Go toolchain module from
# the Go module proxy (what GOTOOLCHAIN does), installed in /usr/local/go-xlb.
GO_MIN=1.26
GO_FETCH=1.26.8
export PATH="$PATH:/usr/local/go/bin:/usr/local/go-xlb/bin"
go_ok() {
	command -v go >/dev/null 2>&1 || return 1
	have=$(go env GOVERSION | sed 's/^go//')
	[ "$(printf '%s\n%s\n' "$GO_MIN" "$have" | sort -V | head -n1)" = "$GO_MIN" ]
}
if ! go_ok; then
	echo "deps.sh: fetching Go $GO_FETCH"
	if ! command -v go >/dev/null 2>&1; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
	fi
	arch=$(dpkg --print-architecture)
	tmp=$(mktemp -d)
	dir=$(cd "$tmp" && GOPATH="$tmp/gopath" GOFLAGS=-mod=mod go mod download -json \
		"golang.org/toolchain@v0.0.1-go$GO_FETCH.linux-$arch" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	rm -rf /usr/local/go-xlb
	cp -r "$dir" /usr/local/go-xlb
	chmod -R u+w "$tmp" && rm -rf "$tmp"
	chmod +x /usr/local/go-xlb/bin/* /usr/local/go-xlb/pkg/tool/*/*
	ln -sf /usr/local/go-xlb/bin/go /usr/local/bin/go
	hash -r
	go_ok || { echo "deps.sh: could not install Go >= $GO_MIN" >&2; exit 1; }
fi

# bpffs: the daemon pins maps there; tests that pin use their own dirs.
if ! mount | grep -q ' /sys/fs/bpf type bpf'; then
	mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
fi

# Offline first: with the module cache filled, nothing goes to the network.
GOPROXY=off go mod download 2>/dev/null || go mod download
echo "deps.sh: ready"
