// SPDX-License-Identifier: Apache-2.0

package frames

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/benchtest"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
)

var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLB(m, &xlbBinary)) }

// testEnv builds a bench lab with two reals, removed at the end.
func testEnv(t *testing.T) *bench.Env {
	t.Helper()
	testenv.RequireRoot(t, "builds network namespaces and runs XDP")
	testenv.RequireTool(t, "nft")
	return benchtest.Env(t, xlbBinary, topo.Topology{Name: fmt.Sprintf("xlbd%d", os.Getpid()), Net: uint8(200 + os.Getpid()%50), Reals: 2})
}

// TestEveryDUTForwards sets each DUT up, sends a paced trial of UDP and
// TCP over IPv4 and IPv6 through it, and checks every frame reached a
// real; then tears it down.
func TestEveryDUTForwards(t *testing.T) {
	e := testEnv(t)
	ctx := context.Background()
	for _, name := range append(bench.DUTNames, "sink") {
		t.Run(name, func(t *testing.T) {
			dut, err := bench.NewDUT(name)
			switch name {
			case "xdp-fwd":
				dut, err = NewFwdDUT(), nil
			case "xdp-fixed":
				dut, err = NewFixedFwdDUT(), nil
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := dut.Setup(ctx, e); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := dut.Teardown(e); err != nil {
					t.Errorf("teardown: %v", err)
				}
			}()
			specs := []TrialSpec{
				{Size: 64, L4: traffic.UDP, Flows: 100, Vary: "l4-src"},
				// ACKs need their connections opened first (warm-up SYNs)
				{Size: 128, L4: traffic.TCPAck, IPv6: true, Flows: 100, Vary: "l3-src", Warmup: true},
			}
			if !dut.Balances() { // forwarders route varying destinations
				specs = append(specs, TrialSpec{Size: 64, L4: traffic.UDP, Flows: 1000, Vary: "l3-both"},
					TrialSpec{Size: 96, L4: traffic.UDP, IPv6: true, Flows: 1000, Vary: "l3-dst"})
			}
			for _, s := range specs {
				s.Rate, s.Duration = 20000, 300*time.Millisecond
				tr, err := RunTrial(ctx, e, dut, s)
				if err != nil {
					t.Fatal(err)
				}
				// the paced generator may end a few frames short of
				// rate x duration on a busy machine (CI once sent 5994):
				// what counts is that every frame sent arrived
				if !tr.Valid || tr.Sent < 5700 || tr.Sent > 6000 || tr.Lost != 0 {
					t.Errorf("%+v: want about 6000 sent, every one received", tr)
				}
			}
			tr, err := RunTrial(ctx, e, dut, TrialSpec{Size: 64, L4: traffic.UDP, Flows: 1, Duration: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s max: tx %.2f Mpps rx %.2f Mpps loss %.2f%% (%s)", name, tr.TxPPS/1e6, tr.RxPPS/1e6, tr.LossPct, tr.Invalid)
		})
	}
}
