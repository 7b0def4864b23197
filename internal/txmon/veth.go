// SPDX-License-Identifier: Apache-2.0

package txmon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// commandTimeout bounds each ip or ethtool run.
const commandTimeout = 10 * time.Second

// XDP attach modes as ip -d -j link show reports them (IFLA_XDP_ATTACHED).
const (
	xdpModeDriver  = 1 // native: the driver runs it, veth NAPI is on
	xdpModeGeneric = 2 // skb: does not make a veth take redirected frames
	xdpModeHW      = 3 // offloaded
)

// CheckVethPeer tells whether frames XDP redirects into ifname can be
// delivered. When ifname is a veth, its peer takes them only if it has a
// native XDP program or GRO on; otherwise the kernel drops every one
// silently. It returns a warning naming the command that fixes it, a
// warning saying so when the peer's network namespace has no name (it
// cannot be inspected), or "" when the peer takes redirected frames or
// ifname is no veth. It runs ip and ethtool; err is set when they fail.
func CheckVethPeer(ifname string) (warning string, err error) {
	return checkVethPeer(ifname, runCommand)
}

// runner runs a command and returns its standard output.
type runner func(name string, args ...string) ([]byte, error)

func runCommand(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func checkVethPeer(ifname string, run runner) (string, error) {
	wrap := func(err error) error { return fmt.Errorf("check veth peer of %s: %w", ifname, err) }
	out, err := run("ip", "-d", "-j", "link", "show", "dev", ifname)
	if err != nil {
		return "", wrap(err)
	}
	links, err := parseIPLinks(out)
	if err != nil {
		return "", wrap(err)
	}
	if len(links) != 1 {
		return "", wrap(fmt.Errorf("ip link show dev %s: %d links", ifname, len(links)))
	}
	self := links[0]
	if self.Kind != "veth" {
		return "", nil
	}
	peer := vethPeer{Ifname: ifname, Index: self.LinkIndex, Name: self.Link}
	if peer.Index == 0 && peer.Name == "" {
		out, err := run("ethtool", "-S", ifname)
		if err != nil {
			return "", wrap(err)
		}
		if peer.Index, err = parsePeerIfindex(out); err != nil {
			return "", wrap(err)
		}
	}
	if self.LinkNetnsID != nil {
		peer.NetnsID = *self.LinkNetnsID
		out, err := run("ip", "-j", "netns", "list")
		if err != nil {
			return "", wrap(err)
		}
		name, ok, err := netnsName(out, peer.NetnsID)
		if err != nil {
			return "", wrap(err)
		}
		if !ok {
			peer.Unnamed = true
			return peer.warning(), nil
		}
		peer.Netns = name
	}
	out, err = run("ip", ipArgs(peer.Netns, "-d", "-j", "link", "show")...)
	if err != nil {
		return "", wrap(err)
	}
	if links, err = parseIPLinks(out); err != nil {
		return "", wrap(err)
	}
	found := false
	for _, l := range links {
		if (peer.Index != 0 && l.Ifindex == peer.Index) || (peer.Index == 0 && l.Name == peer.Name) {
			peer.Name, peer.Index, found = l.Name, l.Ifindex, true
			peer.NativeXDP, peer.GenericXDP = l.NativeXDP, l.GenericXDP
			break
		}
	}
	if !found {
		return "", wrap(fmt.Errorf("peer ifindex %d not found%s", peer.Index, peer.in()))
	}
	if peer.NativeXDP {
		return "", nil
	}
	name, args := ethtoolArgs(peer.Netns, "-k", peer.Name)
	if out, err = run(name, args...); err != nil {
		return "", wrap(err)
	}
	if peer.GRO, err = parseGRO(out); err != nil {
		return "", wrap(err)
	}
	return peer.warning(), nil
}

// vethPeer is what is known of the peer of veth Ifname.
type vethPeer struct {
	Ifname     string // the veth xlb redirects into
	Name       string // its peer
	Index      int    // the peer's ifindex, in its namespace
	Netns      string // the peer's named namespace; "" when it is ours
	NetnsID    int    // the peer's namespace id, as we see it
	Unnamed    bool   // the peer is in a namespace without a name
	NativeXDP  bool   // a driver-mode XDP program is attached
	GenericXDP bool   // a generic (skb) XDP program is attached
	GRO        bool   // generic-receive-offload is on
}

// warning is what the operator is told about p; "" when the peer takes
// redirected frames.
func (p vethPeer) warning() string {
	if p.Unnamed {
		return fmt.Sprintf("veth %s: its peer (ifindex %d) is in network namespace id %d, which has no name "+
			"under /run/netns, so xlb cannot check it; frames redirected into %s are dropped silently "+
			"unless that peer has a native XDP program or GRO on: in the peer's namespace, run "+
			"ethtool -K <peer> gro on", p.Ifname, p.Index, p.NetnsID, p.Ifname)
	}
	if p.NativeXDP || p.GRO {
		return ""
	}
	generic := ""
	if p.GenericXDP {
		generic = " (a generic XDP program does not count)"
	}
	name, args := ethtoolArgs(p.Netns, "-K", p.Name, "gro", "on")
	return fmt.Sprintf("veth %s: its peer %s%s has no native XDP program and GRO off%s, so every frame "+
		"redirected into %s is dropped silently (counted in redirect_errors or redirect_tx_failed); fix: %s %s",
		p.Ifname, p.Name, p.in(), generic, p.Ifname, name, strings.Join(args, " "))
}

// in names the peer's namespace for a message.
func (p vethPeer) in() string {
	if p.Netns == "" {
		return ""
	}
	return " (netns " + p.Netns + ")"
}

// ipArgs runs ip args in namespace ns ("" = ours).
func ipArgs(ns string, args ...string) []string {
	if ns == "" {
		return args
	}
	return append([]string{"-n", ns}, args...)
}

// ethtoolArgs runs ethtool args in namespace ns ("" = ours).
func ethtoolArgs(ns string, args ...string) (string, []string) {
	if ns == "" {
		return "ethtool", args
	}
	return "ip", append([]string{"netns", "exec", ns, "ethtool"}, args...)
}

// ipLink is one link of `ip -d -j link show`.
type ipLink struct {
	Ifindex     int
	Name        string
	Kind        string // linkinfo.info_kind: veth, bridge, ...
	Link        string // the peer's name, when in our namespace
	LinkIndex   int    // the peer's ifindex, when in another namespace
	LinkNetnsID *int   // the peer's namespace id, when in another namespace
	NativeXDP   bool
	GenericXDP  bool
}

// parseIPLinks parses the output of `ip -d -j link show`.
func parseIPLinks(out []byte) ([]ipLink, error) {
	var raw []struct {
		Ifindex     int    `json:"ifindex"`
		Ifname      string `json:"ifname"`
		Link        string `json:"link"`
		LinkIndex   int    `json:"link_index"`
		LinkNetnsID *int   `json:"link_netnsid"`
		XDP         *struct {
			Mode     int `json:"mode"`
			Attached []struct {
				Mode int `json:"mode"`
			} `json:"attached"`
		} `json:"xdp"`
		LinkInfo *struct {
			InfoKind string `json:"info_kind"`
		} `json:"linkinfo"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &raw); err != nil {
		return nil, fmt.Errorf("parse ip -j link show: %w", err)
	}
	links := make([]ipLink, 0, len(raw))
	for _, r := range raw {
		l := ipLink{Ifindex: r.Ifindex, Name: r.Ifname, Link: r.Link, LinkIndex: r.LinkIndex, LinkNetnsID: r.LinkNetnsID}
		if r.LinkInfo != nil {
			l.Kind = r.LinkInfo.InfoKind
		}
		if r.XDP != nil {
			modes := []int{r.XDP.Mode}
			for _, a := range r.XDP.Attached {
				modes = append(modes, a.Mode)
			}
			for _, m := range modes {
				l.NativeXDP = l.NativeXDP || m == xdpModeDriver || m == xdpModeHW
				l.GenericXDP = l.GenericXDP || m == xdpModeGeneric
			}
		}
		links = append(links, l)
	}
	return links, nil
}

// errNoField is returned when a command's output lacks the field sought.
var errNoField = errors.New("field not found")

// parsePeerIfindex reads peer_ifindex from `ethtool -S` of a veth.
func parsePeerIfindex(out []byte) (int, error) {
	v, err := ethtoolField(out, "peer_ifindex")
	if err != nil {
		return 0, fmt.Errorf("parse ethtool -S: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("parse ethtool -S: peer_ifindex %q", v)
	}
	return n, nil
}

// parseGRO reads generic-receive-offload from `ethtool -k`.
func parseGRO(out []byte) (bool, error) {
	v, err := ethtoolField(out, "generic-receive-offload")
	if err != nil {
		return false, fmt.Errorf("parse ethtool -k: %w", err)
	}
	switch strings.Fields(v)[0] {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("parse ethtool -k: generic-receive-offload %q", v)
}

// ethtoolField returns the value of a "name: value" line, trimmed and
// never empty.
func ethtoolField(out []byte, name string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && k == name && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, errNoField)
}

// netnsName finds the name of namespace id in `ip -j netns list`.
func netnsName(out []byte, id int) (string, bool, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return "", false, nil // no named namespace at all
	}
	var list []struct {
		Name string `json:"name"`
		ID   *int   `json:"id"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return "", false, fmt.Errorf("parse ip -j netns list: %w", err)
	}
	for _, ns := range list {
		if ns.ID != nil && *ns.ID == id {
			return ns.Name, true, nil
		}
	}
	return "", false, nil
}
