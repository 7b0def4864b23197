// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestDropReasonsMatchC checks the Go drop reasons and their names
// against enum xlb_drop_reason as bpf2go read it from the object, so a
// reason added in C cannot be miscounted or misnamed in Go.
func TestDropReasonsMatchC(t *testing.T) {
	if int(numDropReasons) != int(xlbXlbDropReasonDROP_REASON_MAX) || len(DropReasonNames) != int(numDropReasons) {
		t.Fatalf("%d Go reasons, %d names, C has %d", numDropReasons, len(DropReasonNames), xlbXlbDropReasonDROP_REASON_MAX)
	}
	for _, tc := range []struct {
		name string
		have DropReason
		want xlbXlbDropReason
	}{
		{"DropEthTruncated", DropEthTruncated, xlbXlbDropReasonDROP_ETH_TRUNCATED},
		{"DropIPTruncated", DropIPTruncated, xlbXlbDropReasonDROP_IP_TRUNCATED},
		{"DropIPVersion", DropIPVersion, xlbXlbDropReasonDROP_IP_VERSION},
		{"DropIPIHL", DropIPIHL, xlbXlbDropReasonDROP_IP_IHL},
		{"DropIPLength", DropIPLength, xlbXlbDropReasonDROP_IP_LENGTH},
		{"DropFragment", DropFragment, xlbXlbDropReasonDROP_FRAGMENT},
		{"DropIPv6ExtHdr", DropIPv6ExtHdr, xlbXlbDropReasonDROP_IPV6EXTHDR},
		{"DropL4Truncated", DropL4Truncated, xlbXlbDropReasonDROP_L4TRUNCATED},
		{"DropTCPDoff", DropTCPDoff, xlbXlbDropReasonDROP_TCP_DOFF},
		{"DropTTLExpired", DropTTLExpired, xlbXlbDropReasonDROP_TTL_EXPIRED},
		{"DropNoReal", DropNoReal, xlbXlbDropReasonDROP_NO_REAL},
		{"DropNoLocalIP", DropNoLocalIP, xlbXlbDropReasonDROP_NO_LADDR},
		{"DropNoLocalPort", DropNoLocalPort, xlbXlbDropReasonDROP_NO_LPORT},
		{"DropConnTableFull", DropConnTableFull, xlbXlbDropReasonDROP_CONN_TABLE_FULL},
		{"DropFIB", DropFIB, xlbXlbDropReasonDROP_FIB},
		{"DropUDPChecksumZero", DropUDPChecksumZero, xlbXlbDropReasonDROP_UDP_CSUM_ZERO},
		{"DropICMPInner", DropICMPInner, xlbXlbDropReasonDROP_ICMP_INNER},
		{"DropNoNeigh", DropNoNeigh, xlbXlbDropReasonDROP_NO_NEIGH},
		{"DropTCPNotSYN", DropTCPNotSYN, xlbXlbDropReasonDROP_TCP_NOT_SYN},
		{"DropUDPLength", DropUDPLength, xlbXlbDropReasonDROP_UDP_LENGTH},
		{"DropFragNeeded", DropFragNeeded, xlbXlbDropReasonDROP_FRAG_NEEDED},
		{"DropTooBig", DropTooBig, xlbXlbDropReasonDROP_TOO_BIG},
		{"DropHeaderSplit", DropHeaderSplit, xlbXlbDropReasonDROP_HEADER_SPLIT},
		{"DropSyncookieInvalid", DropSyncookieInvalid, xlbXlbDropReasonDROP_SYNCOOKIE_INVALID},
		{"DropSynproxyEarly", DropSynproxyEarly, xlbXlbDropReasonDROP_SYNPROXY_EARLY},
	} {
		if uint32(tc.have) != uint32(tc.want) {
			t.Errorf("%s = %d, C says %d", tc.name, tc.have, tc.want)
		}
	}
}

// TestDropReasonNamesMatchC checks the spelling of every name the
// metrics and the CLI show against enum xlb_drop_reason in the object's
// BTF: DROP_NO_LPORT is shown as no_lport.
func TestDropReasonNamesMatchC(t *testing.T) {
	spec, err := loadXlb()
	if err != nil {
		t.Fatal(err)
	}
	var enum *btf.Enum
	if err := spec.Types.TypeByName("xlb_drop_reason", &enum); err != nil {
		t.Fatalf("enum xlb_drop_reason in the object's BTF: %v", err)
	}
	seen := 0
	for _, v := range enum.Values {
		if v.Name == "DROP_REASON_MAX" {
			continue
		}
		seen++
		want := strings.ToLower(strings.TrimPrefix(v.Name, "DROP_"))
		if v.Value >= uint64(len(DropReasonNames)) {
			t.Errorf("%s = %d has no Go name", v.Name, v.Value)
			continue
		}
		if have := DropReasonNames[v.Value]; have != want {
			t.Errorf("DropReasonNames[%d] = %q; C names it %s, so want %q", v.Value, have, v.Name, want)
		}
	}
	if seen != len(DropReasonNames) {
		t.Errorf("C has %d drop reasons, Go names %d", seen, len(DropReasonNames))
	}
}

// TestEventNamesMatchC checks that every event of enum xlb_event has a
// name, in the enum's order.
func TestEventNamesMatchC(t *testing.T) {
	if len(EventNames) != int(xlbXlbEventEVENT_MAX) {
		t.Fatalf("%d event names, C has %d events", len(EventNames), xlbXlbEventEVENT_MAX)
	}
	for i, c := range []xlbXlbEvent{xlbXlbEventEVENT_ICMP_TOO_BIG, xlbXlbEventEVENT_TOA_ADDED,
		xlbXlbEventEVENT_TOA_NO_ROOM, xlbXlbEventEVENT_PROXY_HDR_SENT, xlbXlbEventEVENT_MSS_LOWERED,
		xlbXlbEventEVENT_SYNCOOKIE_SENT, xlbXlbEventEVENT_SYNCOOKIE_VALID, xlbXlbEventEVENT_SYNPROXY_OPENED,
		xlbXlbEventEVENT_SYNPROXY_EARLY_KEPT} {
		if int(c) != i {
			t.Errorf("event %s is %d in C, at %d in EventNames", EventNames[i], c, i)
		}
	}
}
