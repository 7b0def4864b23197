// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// TestTimedStagesForwardTheSame: a program loaded with TimeStages
// forwards a new connection's SYN and its next packet byte for byte as
// the daemon's does, and times one new connection (the next packet is
// none); the daemon's program has no sums to read.
func TestTimedStagesForwardTheSame(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, Options{TimeStages: true})
			real1, local := e.oneRealService(f, loadbalancer.TCP)
			if err := e.dp.ResetStages(); err != nil {
				t.Fatal(err)
			}
			syn := e.clientPkt(f, loadbalancer.TCP, 40000, 80, "S")
			e.expect(syn.frame(t), XDPRedirect, syn.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))
			next := syn
			next.flags, next.seq = "A", 1
			e.expect(next.frame(t), XDPRedirect, next.translated(local, real1, e.realIf.HardwareAddr, realMAC(1)).frame(t))
			st, err := e.dp.NewConnStages()
			if err != nil {
				t.Fatal(err)
			}
			if st.Conns != 1 {
				t.Fatalf("%d connections timed, want 1: %+v", st.Conns, st)
			}
			for name, d := range map[string]int64{"lookup": st.Lookup.Nanoseconds(), "schedule": st.Schedule.Nanoseconds(),
				"port": st.Port.Nanoseconds(), "insert": st.Insert.Nanoseconds()} {
				if d <= 0 {
					t.Errorf("stage %s took %d ns: every stage reads the clock once at least", name, d)
				}
			}
		})
	}
	e := newEnv(t, Options{})
	if _, err := e.dp.NewConnStages(); err == nil || !strings.Contains(err.Error(), "without Options.TimeStages") {
		t.Errorf("untimed program: error %v, want one naming Options.TimeStages", err)
	}
}
