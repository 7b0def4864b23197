// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// The Go names below are written by hand (other packages use them); these
// tests tie each one to the value bpf2go read from the compiled object, so
// a constant changed or added on one side only fails here. Drop reasons
// are checked in types_test.go.

// cEnumValues returns the number of values of the named enum in the
// object's BTF.
func cEnumValues(t *testing.T, name string) int {
	t.Helper()
	spec, err := loadXlb()
	if err != nil {
		t.Fatal(err)
	}
	var enum *btf.Enum
	if err := spec.Types.TypeByName(name, &enum); err != nil {
		t.Fatalf("enum %s in the object's BTF: %v", name, err)
	}
	return len(enum.Values)
}

func TestSchedulersMatchC(t *testing.T) {
	tests := []struct {
		name string
		have loadbalancer.Scheduler
		want xlbXlbSched
	}{
		{"RoundRobin", loadbalancer.RoundRobin, xlbXlbSchedXLB_SCHED_RR},
		{"WeightedRoundRobin", loadbalancer.WeightedRoundRobin, xlbXlbSchedXLB_SCHED_WRR},
		{"MaglevHash", loadbalancer.MaglevHash, xlbXlbSchedXLB_SCHED_MH},
		{"SourceHash", loadbalancer.SourceHash, xlbXlbSchedXLB_SCHED_SH},
		{"LeastConn", loadbalancer.LeastConn, xlbXlbSchedXLB_SCHED_LC},
		{"WeightedLeastConn", loadbalancer.WeightedLeastConn, xlbXlbSchedXLB_SCHED_WLC},
	}
	named := 0
	for s := 0; s < 256; s++ {
		if loadbalancer.Scheduler(s).Valid() {
			named++
		}
	}
	if n := cEnumValues(t, "xlb_sched"); n != len(tests) || n != named {
		t.Fatalf("enum xlb_sched has %d values; Go checks %d and names %d", n, len(tests), named)
	}
	for _, tc := range tests {
		if uint32(tc.have) != uint32(tc.want) {
			t.Errorf("%s = %d, C says %d", tc.name, tc.have, tc.want)
		}
	}
}

func TestConnStatesMatchC(t *testing.T) {
	tests := []struct {
		name string
		have loadbalancer.ConnState
		want xlbCtState
	}{
		{"StateSynSent", loadbalancer.StateSynSent, xlbCtStateCT_SYN_SENT},
		{"StateEstablished", loadbalancer.StateEstablished, xlbCtStateCT_ESTABLISHED},
		{"StateFin", loadbalancer.StateFin, xlbCtStateCT_FIN},
		{"StateClose", loadbalancer.StateClose, xlbCtStateCT_CLOSE},
		{"StateUDP", loadbalancer.StateUDP, xlbCtStateCT_UDP},
	}
	if int(xlbCtStateCT_STATE_MAX) != len(tests) {
		t.Fatalf("C has %d connection states, Go checks %d", xlbCtStateCT_STATE_MAX, len(tests))
	}
	for _, tc := range tests {
		if uint32(tc.have) != uint32(tc.want) {
			t.Errorf("%s = %d, C says %d", tc.name, tc.have, tc.want)
		}
		if s := tc.have.String(); s == loadbalancer.ConnState(xlbCtStateCT_STATE_MAX).String() {
			t.Errorf("%s has no name (%s)", tc.name, s)
		}
	}
}

// TestLimitsMatchC checks the sizes and the address-filter hash Go shares
// with the data path.
func TestLimitsMatchC(t *testing.T) {
	spec, err := loadXlb()
	if err != nil {
		t.Fatal(err)
	}
	filter, ok := spec.Maps[xlbMapLocalAddrFilter]
	if !ok {
		t.Fatalf("no map %s in the object", xlbMapLocalAddrFilter)
	}
	timeouts := spec.Variables[xlbVarXlbSvcTimeouts].Size() / uint32(unsafe.Sizeof(xlbSvcTimeouts{}))
	var entry xlbCtEntry
	for _, tc := range []struct {
		name string
		have uint64
		want uint64
	}{
		{"DefaultServiceCapacity (XLB_MAX_SERVICES)", loadbalancer.DefaultServiceCapacity, uint64(spec.Maps[xlbMapServices].MaxEntries)},
		{"DefaultRealCapacity (XLB_MAX_REALS)", loadbalancer.DefaultRealCapacity, uint64(spec.Maps[xlbMapReals].MaxEntries)},
		{"DefaultLocalIPCapacity (XLB_MAX_LADDRS)", loadbalancer.DefaultLocalIPCapacity, uint64(spec.Maps[xlbMapLaddrs].MaxEntries)},
		{"MaxServiceCapacity (XLB_SVC_ID_LIMIT: xlb_svc_timeouts)", loadbalancer.MaxServiceCapacity, uint64(timeouts)},
		{"MaxServiceCapacity (ct_entry.svc_id)", loadbalancer.MaxServiceCapacity, 1 << (8 * unsafe.Sizeof(entry.SvcId))},
		{"MaxRealCapacity (ct_entry.real_id)", loadbalancer.MaxRealCapacity, 1 << (8 * unsafe.Sizeof(entry.RealId))},
		{"MaxServiceLocalIPs (XLB_MAX_SVC_LADDRS)", loadbalancer.MaxServiceLocalIPs, uint64(len(xlbService{}.LaddrIds))},
		{"addrFilterWords (XLB_ADDR_FILTER_WORDS)", addrFilterWords, uint64(filter.MaxEntries)},
		{"addrFilterMult (XLB_ADDR_FILTER_MULT)", addrFilterMult, uint64(xlbXlbAddrFilterConstsXLB_ADDR_FILTER_HASH_MULT)},
		{"ctHashSeed (XLB_CT_HASH_SEED)", ctHashSeed, uint64(xlbXlbCtConstsXLB_CT_CONST_HASH_SEED)},
		{"jhashInit (XLB_JHASH_INIT)", jhashInit, uint64(xlbXlbCtConstsXLB_CT_CONST_JHASH_INIT)},
		{"ctProbe (XLB_CT_PROBE)", ctProbe, uint64(xlbXlbCtConstsXLB_CT_CONST_PROBE)},
		{"ctReuseGrace (XLB_CT_REUSE_GRACE)", ctReuseGrace, uint64(xlbXlbCtConstsXLB_CT_CONST_REUSE_GRACE)},
		{"ctHoldPeriod (XLB_CT_HOLD_PERIOD)", ctHoldPeriod, uint64(xlbXlbCtConstsXLB_CT_CONST_HOLD_PERIOD)},
		{"ctHalfOpenAge (XLB_CT_HALF_OPEN_AGE)", ctHalfOpenAge, uint64(xlbXlbCtConstsXLB_CT_CONST_HALF_OPEN_AGE)},
		{"ctSlotsPerConnNum (XLB_CT_SLOTS_PER_CONN_NUM)", ctSlotsPerConnNum, uint64(xlbXlbCtConstsXLB_CT_CONST_SLOTS_NUM)},
		{"ctSlotsPerConnDen (XLB_CT_SLOTS_PER_CONN_DEN)", ctSlotsPerConnDen, uint64(xlbXlbCtConstsXLB_CT_CONST_SLOTS_DEN)},
	} {
		if tc.have != tc.want {
			t.Errorf("%s = %d, C says %d", tc.name, tc.have, tc.want)
		}
	}
}

// TestFlagsAndFamiliesMatchC checks that every value of the enums whose
// constants Go takes from the object (families, address, real and
// connection flags) is one Go uses, so a flag added in C alone is seen.
func TestFlagsAndFamiliesMatchC(t *testing.T) {
	tests := []struct {
		enum string
		have []uint64
	}{
		{"xlb_family", []uint64{uint64(familyV4), uint64(familyV6)}},
		{"xlb_addr_flags", []uint64{uint64(addrVIP), uint64(addrLaddr)}},
		{"xlb_real_flags", []uint64{uint64(realFInUse), uint64(realFDown), uint64(realFUnresolved)}},
		{"ct_flags", []uint64{uint64(ctFReverse), uint64(xlbCtFlagsCT_F_PERSIST), uint64(ctFUsed), uint64(ctFBusy),
			uint64(ctFTOA), uint64(ctFProxy), uint64(ctFSynProxy)}}, // Go does not read CT_F_PERSIST
	}
	spec, err := loadXlb()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		var enum *btf.Enum
		if err := spec.Types.TypeByName(tc.enum, &enum); err != nil {
			t.Fatalf("enum %s in the object's BTF: %v", tc.enum, err)
		}
		if len(enum.Values) != len(tc.have) {
			t.Errorf("enum %s has %d values; Go uses %d", tc.enum, len(enum.Values), len(tc.have))
		}
		for i, v := range enum.Values {
			if i < len(tc.have) && v.Value != tc.have[i] {
				t.Errorf("enum %s: %s = %d, Go has %d", tc.enum, v.Name, v.Value, tc.have[i])
			}
		}
	}
}
