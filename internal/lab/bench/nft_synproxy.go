// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// nftSynproxyDUT is the kernel's own SYN proxy in front of the reals, the
// baseline of `xlb bench synflood`: nftables `synproxy` in the forward
// hook, after a stateless DNAT of the VIP to a real by a hash of the
// client's address and port (prerouting, before conntrack, so the SYN,
// which is not tracked, is routed to its real already), and the VIP put
// back as the source of the reals' segments (postrouting). As
// nf_synproxy asks: SYNs untracked, nf_conntrack_tcp_loose off.
type nftSynproxyDUT struct {
	nftDUT
	loose string // nf_conntrack_tcp_loose before the run
}

const nftSynproxyTable = "xlbsynproxy"

func (*nftSynproxyDUT) Name() string { return "nft-synproxy" }
func (n *nftSynproxyDUT) Version(e *Env) string {
	return n.nftDUT.Version(e) + "; synproxy mss 1460 wscale 7 timestamp sack-perm, stateless DNAT"
}

// synproxyRules is the ruleset for one family.
func synproxyRules(fam string, vip netip.Addr, reals []netip.Addr) string {
	var m, set []string
	for i, r := range reals {
		m = append(m, fmt.Sprintf("%d : %s", i, r))
		set = append(set, r.String())
	}
	return fmt.Sprintf(`table %[1]s %[2]s {
  chain from_client {
    type filter hook prerouting priority -310; policy accept;
    %[1]s daddr %[3]s meta l4proto tcp %[1]s daddr set jhash %[1]s saddr . tcp sport mod %[4]d map { %[5]s }
    iifname "l0" tcp flags & (fin | syn | rst | ack) == syn notrack
  }
  chain syn_forward {
    type filter hook forward priority filter; policy accept;
    iifname "l0" meta l4proto tcp ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
    iifname "l0" meta l4proto tcp ct state invalid drop
  }
  chain to_client {
    type filter hook postrouting priority 100; policy accept;
    oifname "l0" %[1]s saddr { %[6]s } meta l4proto tcp %[1]s saddr set %[3]s
  }
}
`, fam, nftSynproxyTable, vip, len(reals), strings.Join(m, ", "), strings.Join(set, ", "))
}

func (n *nftSynproxyDUT) Setup(_ context.Context, e *Env) error {
	t := e.Topo
	var reals4, reals6 []netip.Addr
	for i := 1; i <= t.Reals; i++ {
		reals4 = append(reals4, t.RealAddr(i))
		reals6 = append(reals6, t.RealAddr6(i))
	}
	rules := synproxyRules("ip", t.VIP(), reals4) + synproxyRules("ip6", t.VIP6(), reals6)
	f, err := os.CreateTemp("", "xlb-bench-nft-synproxy-*.conf")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(rules); err != nil {
		return err
	}
	f.Close()
	const loose = "net.netfilter.nf_conntrack_tcp_loose"
	out, err := e.RunIn(t.LB(), "sysctl", "-n", loose)
	if err != nil {
		return err
	}
	n.loose = strings.TrimSpace(out)
	if _, err := e.RunIn(t.LB(), "sysctl", "-qw", loose+"=0"); err != nil {
		return err
	}
	if _, err := e.RunIn(t.LB(), "nft", "-f", f.Name()); err != nil {
		return err
	}
	return n.tuneConntrack(e)
}

func (*nftSynproxyDUT) Alive(_ context.Context, e *Env) error {
	if _, err := e.RunIn(e.Topo.LB(), "nft", "list", "table", "ip", nftSynproxyTable); err != nil {
		return err
	}
	return forwarding(e)
}

func (n *nftSynproxyDUT) Teardown(e *Env) error {
	if n.loose != "" {
		_, _ = e.RunIn(e.Topo.LB(), "sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose="+n.loose)
	}
	return n.removeTables(e, nftSynproxyTable)
}

// SynproxyCounts are a SYN proxy's counters: SYNs answered with a
// cookie, and ACKs returning a valid or invalid one.
type SynproxyCounts struct {
	SYNs    uint64 `json:"syns"`
	Valid   uint64 `json:"valid"`
	Invalid uint64 `json:"invalid"`
}

// Sub returns c minus an earlier reading.
func (c SynproxyCounts) Sub(e SynproxyCounts) SynproxyCounts {
	return SynproxyCounts{c.SYNs - e.SYNs, c.Valid - e.Valid, c.Invalid - e.Invalid}
}

// SynproxyCounter is a DUT that may have a SYN proxy and read its
// counters.
type SynproxyCounter interface {
	// SynProxy tells whether the DUT answers SYNs with cookies.
	SynProxy() bool
	SynproxyCounts(ctx context.Context, e *Env) (SynproxyCounts, error)
}

func (*nftSynproxyDUT) SynProxy() bool { return true }
func (x *xlbDUT) SynProxy() bool       { return x.shape.SynProxy }

// SynproxyCounts sums nf_synproxy's per-CPU counters in the balancer
// (/proc/net/stat/synproxy: entries, syn_received, cookie_invalid,
// cookie_valid, ... in hex).
func (*nftSynproxyDUT) SynproxyCounts(_ context.Context, e *Env) (SynproxyCounts, error) {
	out, err := e.RunIn(e.Topo.LB(), "cat", "/proc/net/stat/synproxy")
	if err != nil {
		return SynproxyCounts{}, err
	}
	var c SynproxyCounts
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		v := make([]uint64, 4)
		for i := range v {
			if v[i], err = strconv.ParseUint(f[i], 16, 64); err != nil {
				return c, fmt.Errorf("/proc/net/stat/synproxy: %q: %w", line, err)
			}
		}
		c.SYNs += v[1]
		c.Invalid += v[2]
		c.Valid += v[3]
	}
	return c, nil
}

// SynproxyCounts reads xlb's SYN proxy counters.
func (x *xlbDUT) SynproxyCounts(ctx context.Context, _ *Env) (SynproxyCounts, error) {
	st, err := x.d.Client().Stats(ctx)
	if err != nil {
		return SynproxyCounts{}, err
	}
	return SynproxyCounts{SYNs: st.Events["syncookie_sent"], Valid: st.Events["syncookie_valid"],
		Invalid: st.Drops["syncookie_invalid"]}, nil
}
