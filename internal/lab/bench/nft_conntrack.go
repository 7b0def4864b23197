// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// nftConntrackTimeouts mirror the xlb DUT's: a closed connection is
// kept 2 s, so that both DUTs free their entries alike under a
// connection-rate test (the kernel's defaults keep TIME_WAIT 120 s).
var nftConntrackTimeouts = []string{
	"net.netfilter.nf_conntrack_tcp_timeout_time_wait=2",
	"net.netfilter.nf_conntrack_tcp_timeout_fin_wait=2",
	"net.netfilter.nf_conntrack_tcp_timeout_close_wait=2",
	"net.netfilter.nf_conntrack_tcp_timeout_last_ack=2",
}

// Conntrack's table limits are the host's (a namespace may only lower
// them): raised for the run, so that conntrack can hold what the cc
// scenario asks, and put back at teardown.
var nftConntrackLimits = map[string]uint64{
	"/proc/sys/net/netfilter/nf_conntrack_max":     12_000_000,
	"/proc/sys/net/netfilter/nf_conntrack_buckets": 1 << 20,
}

// tuneConntrack sets the timeouts in the balancer's namespace and
// raises the host's limits where they are lower.
func (n *nftDUT) tuneConntrack(e *Env) error {
	for _, s := range nftConntrackTimeouts {
		if _, err := e.RunIn(e.Topo.LB(), "sysctl", "-qw", s); err != nil {
			return err
		}
	}
	n.restore = map[string]string{}
	for file, want := range nftConntrackLimits {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("conntrack limit: %w", err)
		}
		have, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if have >= want {
			continue
		}
		if err := os.WriteFile(file, []byte(strconv.FormatUint(want, 10)), 0o644); err != nil {
			return fmt.Errorf("raise %s to %d: %w", file, want, err)
		}
		n.restore[file] = strings.TrimSpace(string(b))
	}
	return nil
}

// restoreConntrack puts the host's limits back.
func (n *nftDUT) restoreConntrack() {
	for file, v := range n.restore {
		_ = os.WriteFile(file, []byte(v), 0o644)
	}
	n.restore = nil
}
