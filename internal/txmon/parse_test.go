// SPDX-License-Identifier: Apache-2.0

package txmon

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Literal outputs of ip and ethtool (iproute2 6.x, ethtool 6.x, kernel 6.18).
const (
	// a veth whose peer is in another namespace (link_index, link_netnsid)
	ipVethOtherNS = `[{"ifindex":2,"link_index":2,"ifname":"va","flags":["BROADCAST","MULTICAST"],"mtu":1500,"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"a2:29:c1:7f:39:fa","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"inet6_addr_gen_mode":"eui64","num_tx_queues":2,"num_rx_queues":2,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]
`
	// a veth whose peer is in the same namespace (link by name)
	ipVethSameNS = `[{"ifindex":4,"link":"vs2","ifname":"vs1","flags":["BROADCAST","MULTICAST","M-DOWN"],"mtu":1500,"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"56:77:6b:b3:fb:b2","broadcast":"ff:ff:ff:ff:ff:ff","promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"inet6_addr_gen_mode":"eui64","num_tx_queues":2,"num_rx_queues":2,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]`
	// the peer, with a native (mode 1) XDP program
	ipPeerNativeXDP = `[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK"],"mtu":65536,"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00","promiscuity":0,"allmulti":0,"min_mtu":0,"max_mtu":0,"inet6_addr_gen_mode":"eui64","num_tx_queues":1,"num_rx_queues":1,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536},{"ifindex":2,"link_index":2,"ifname":"vb","flags":["BROADCAST","MULTICAST"],"mtu":1500,"xdp":{"mode":1,"prog":{"id":13,"name":"xdp_tx","tag":"708c0e440e966331","jited":1,"load_time":295675164733,"created_by_uid":0,"btf_id":20},"attached":[{"mode":1,"prog":{"id":13,"name":"xdp_tx","tag":"708c0e440e966331","jited":1,"load_time":295675164733,"created_by_uid":0,"btf_id":20}}]},"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"0a:06:55:f2:3d:e1","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"inet6_addr_gen_mode":"eui64","num_tx_queues":2,"num_rx_queues":2,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]`
	// the peer, with a generic (mode 2) XDP program
	ipPeerGenericXDP = `[{"ifindex":2,"link_index":2,"ifname":"vb","flags":["BROADCAST","MULTICAST"],"mtu":1500,"xdp":{"mode":2,"prog":{"id":8,"name":"xdp_tx","tag":"708c0e440e966331","jited":1,"load_time":295647183985,"created_by_uid":0,"btf_id":11},"attached":[{"mode":2,"prog":{"id":8,"name":"xdp_tx","tag":"708c0e440e966331","jited":1,"load_time":295647183985,"created_by_uid":0,"btf_id":11}}]},"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"0a:06:55:f2:3d:e1","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"inet6_addr_gen_mode":"eui64","num_tx_queues":2,"num_rx_queues":2,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]`
	// the peer without XDP
	ipPeerNoXDP = `[{"ifindex":2,"link_index":2,"ifname":"vb","flags":["BROADCAST","MULTICAST"],"mtu":1500,"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"0a:06:55:f2:3d:e1","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"inet6_addr_gen_mode":"eui64","num_tx_queues":2,"num_rx_queues":2,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]`
	// a physical NIC
	ipEth = `[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"fq_codel","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"52:54:00:12:34:56","broadcast":"ff:ff:ff:ff:ff:ff","promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":9000,"inet6_addr_gen_mode":"eui64","num_tx_queues":1,"num_rx_queues":1,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":65536,"tso_max_segs":65535,"gro_max_size":65536,"parentbus":"virtio","parentdev":"virtio0"}]`

	ethtoolStats = `NIC statistics:
     peer_ifindex: 2
     rx_queue_0_xdp_packets: 0
     rx_queue_0_xdp_bytes: 0
     rx_queue_0_drops: 0
     tx_queue_0_xdp_xmit: 0
     tx_queue_0_xdp_xmit_errors: 0
`
	ethtoolFeatures = `Features for va:
rx-checksumming: on
tx-checksumming: on
	tx-checksum-ipv4: off [fixed]
	tx-checksum-ip-generic: on
generic-segmentation-offload: on
generic-receive-offload: %s
large-receive-offload: off [fixed]
rx-vlan-offload: on
`
	netnsList = `[{"name":"txexpB","id":0},{"name":"txexpA"}]
`
)

func ptr(n int) *int { return &n }

func TestParseIPLinks(t *testing.T) {
	tests := []struct {
		name string
		have string
		want []ipLink
	}{
		{name: "veth, peer in another netns", have: ipVethOtherNS,
			want: []ipLink{{Ifindex: 2, Name: "va", Kind: "veth", LinkIndex: 2, LinkNetnsID: ptr(0)}}},
		{name: "veth, peer here", have: ipVethSameNS,
			want: []ipLink{{Ifindex: 4, Name: "vs1", Kind: "veth", Link: "vs2"}}},
		{name: "native xdp", have: ipPeerNativeXDP, want: []ipLink{
			{Ifindex: 1, Name: "lo"},
			{Ifindex: 2, Name: "vb", Kind: "veth", LinkIndex: 2, LinkNetnsID: ptr(0), NativeXDP: true}}},
		{name: "generic xdp", have: ipPeerGenericXDP,
			want: []ipLink{{Ifindex: 2, Name: "vb", Kind: "veth", LinkIndex: 2, LinkNetnsID: ptr(0), GenericXDP: true}}},
		{name: "multi: native and generic", have: `[{"ifindex":3,"ifname":"x","xdp":{"mode":4,"attached":[{"mode":1},{"mode":2}]}}]`,
			want: []ipLink{{Ifindex: 3, Name: "x", NativeXDP: true, GenericXDP: true}}},
		{name: "nic", have: ipEth, want: []ipLink{{Ifindex: 2, Name: "eth0"}}},
		{name: "empty list", have: "[]\n", want: []ipLink{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseIPLinks([]byte(tt.have))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if _, err := parseIPLinks([]byte("Device \"x\" does not exist.")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestParsePeerIfindex(t *testing.T) {
	tests := []struct {
		name    string
		have    string
		want    int
		wantErr bool
	}{
		{name: "veth", have: ethtoolStats, want: 2},
		{name: "no peer_ifindex", have: "NIC statistics:\n     rx_packets: 10\n", wantErr: true},
		{name: "not a number", have: "NIC statistics:\n     peer_ifindex: x\n", wantErr: true},
		{name: "empty", have: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePeerIfindex([]byte(tt.have))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %d, %v; want %d (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseGRO(t *testing.T) {
	tests := []struct {
		name    string
		have    string
		want    bool
		wantErr bool
	}{
		{name: "off", have: fmt.Sprintf(ethtoolFeatures, "off"), want: false},
		{name: "on", have: fmt.Sprintf(ethtoolFeatures, "on"), want: true},
		{name: "fixed on", have: fmt.Sprintf(ethtoolFeatures, "on [fixed]"), want: true},
		{name: "requested on", have: fmt.Sprintf(ethtoolFeatures, "off [requested on]"), want: false},
		{name: "missing", have: "Features for x:\nrx-checksumming: on\n", wantErr: true},
		{name: "odd value", have: "generic-receive-offload: maybe\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGRO([]byte(tt.have))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNetnsName(t *testing.T) {
	tests := []struct {
		name   string
		have   string
		id     int
		want   string
		wantOK bool
	}{
		{name: "named", have: netnsList, id: 0, want: "txexpB", wantOK: true},
		{name: "id not listed", have: netnsList, id: 3},
		{name: "no namespaces, empty output", have: "", id: 0},
		{name: "no namespaces, empty list", have: "[]\n", id: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := netnsName([]byte(tt.have), tt.id)
			if err != nil || got != tt.want || ok != tt.wantOK {
				t.Errorf("got %q, %v, %v; want %q, %v", got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

func TestVethPeerWarning(t *testing.T) {
	tests := []struct {
		name string
		have vethPeer
		want []string // substrings; none = no warning
	}{
		{name: "gro on", have: vethPeer{Ifname: "va", Name: "vb", Netns: "ns1", GRO: true}},
		{name: "native xdp", have: vethPeer{Ifname: "va", Name: "vb", Netns: "ns1", NativeXDP: true}},
		{name: "other netns", have: vethPeer{Ifname: "va", Name: "vb", Netns: "ns1"},
			want: []string{"veth va", "peer vb (netns ns1)", "dropped silently", "fix: ip netns exec ns1 ethtool -K vb gro on"}},
		{name: "same netns", have: vethPeer{Ifname: "vs1", Name: "vs2"},
			want: []string{"peer vs2 has no native XDP program and GRO off", "fix: ethtool -K vs2 gro on"}},
		{name: "generic xdp only", have: vethPeer{Ifname: "va", Name: "vb", Netns: "ns1", GenericXDP: true},
			want: []string{"a generic XDP program does not count", "fix: ip netns exec ns1 ethtool -K vb gro on"}},
		{name: "unnamed netns", have: vethPeer{Ifname: "va", Index: 7, NetnsID: 4, Unnamed: true},
			want: []string{"ifindex 7", "namespace id 4", "no name", "cannot check", "ethtool -K <peer> gro on"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.have.warning()
			if len(tt.want) == 0 && got != "" {
				t.Errorf("warning %q, want none", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q lacks %q", got, w)
				}
			}
		})
	}
}

// fakeRunner answers commands from canned outputs, keyed by the command
// line; a missing key fails the command.
type fakeRunner map[string]string

func (f fakeRunner) run(name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	out, ok := f[line]
	if !ok {
		return nil, fmt.Errorf("%s: %w", line, errors.New("exit status 1"))
	}
	return []byte(out), nil
}

func TestCheckVethPeerCommands(t *testing.T) {
	const (
		self    = "ip -d -j link show dev va"
		netns   = "ip -j netns list"
		peerIP  = "ip -n txexpB -d -j link show"
		peerEth = "ip netns exec txexpB ethtool -k vb"
	)
	tests := []struct {
		name    string
		have    fakeRunner
		want    string // substring of the warning; "" = none
		wantErr bool
	}{
		{name: "not a veth", have: fakeRunner{self: ipEth}},
		{name: "peer without xdp or gro",
			have: fakeRunner{self: ipVethOtherNS, netns: netnsList, peerIP: ipPeerNoXDP, peerEth: fmt.Sprintf(ethtoolFeatures, "off")},
			want: "fix: ip netns exec txexpB ethtool -K vb gro on"},
		{name: "peer with gro",
			have: fakeRunner{self: ipVethOtherNS, netns: netnsList, peerIP: ipPeerNoXDP, peerEth: fmt.Sprintf(ethtoolFeatures, "on")}},
		{name: "peer with native xdp (ethtool not needed)",
			have: fakeRunner{self: ipVethOtherNS, netns: netnsList, peerIP: ipPeerNativeXDP}},
		{name: "peer in an unnamed namespace",
			have: fakeRunner{self: ipVethOtherNS, netns: `[{"name":"other","id":5}]`},
			want: "has no name under /run/netns"},
		{name: "peer here, found by name",
			have: fakeRunner{"ip -d -j link show dev vs1": ipVethSameNS,
				"ip -d -j link show": `[{"ifindex":5,"ifname":"vs2","linkinfo":{"info_kind":"veth"}}]`,
				"ethtool -k vs2":     fmt.Sprintf(ethtoolFeatures, "off")},
			want: "fix: ethtool -K vs2 gro on"},
		{name: "no such interface", have: fakeRunner{}, wantErr: true},
		{name: "peer vanished",
			have:    fakeRunner{self: ipVethOtherNS, netns: netnsList, peerIP: "[]"},
			wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ifname := "va"
			if _, ok := tt.have["ip -d -j link show dev vs1"]; ok {
				ifname = "vs1"
			}
			got, err := checkVethPeer(ifname, tt.have.run)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warning %q, want %q", got, tt.want)
			}
		})
	}
}
