// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/benchtest"
	"github.com/xlb-dev/xlb/internal/lab/topo"
	"github.com/xlb-dev/xlb/internal/labtest"
	"github.com/xlb-dev/xlb/internal/testenv"
	"github.com/xlb-dev/xlb/internal/xdpfrags"
)

var xlbBinary string

func TestMain(m *testing.M) { os.Exit(labtest.RunTestsWithXLB(m, &xlbBinary)) }

// appTests are the tests each app scenario must report, in order.
var appTests = map[string][]string{
	"latency": latencyTests(),
	"redis": {"redis PING_BULK", "redis SET", "redis LRANGE_100", "redis PING_BULK -d 1400 -P 50", "redis SET -d 1400 -P 50",
		"redis LRANGE_100 -d 1400 -P 50", redisLatencyTest},
	"http": {"wrk"},
	"throughput": {"TCP_STREAM MTU 1500", "TCP_STREAM MTU 1500, 150 streams", "iperf3 MTU 1500",
		"TCP_STREAM MTU 9000", "TCP_STREAM MTU 9000, 150 streams", "iperf3 MTU 9000"},
}

// latencyTests are the latency scenario's tests on this machine: TCP_RR
// and TCP_CRR on one CPU, then on two, then sockperf on each.
func latencyTests() []string {
	places, err := latencyPlacements()
	if err != nil {
		panic(err)
	}
	var rr, sockperf []string
	for _, p := range places {
		rr = append(rr, "TCP_RR, "+p.name, "TCP_CRR, "+p.name)
		sockperf = append(sockperf, "sockperf ping-pong, "+p.name)
	}
	return append(rr, sockperf...)
}

// configsOf are the configurations a DUT's results name (AppResult.Config)
// in a scenario: a DUT attached with XDP runs throughput in each mode.
func configsOf(t *testing.T, scenario, dut string) []string {
	if _, ok := appDUT(t, dut).(bench.ModeSwitcher); !ok || scenario != "throughput" {
		return []string{dut}
	}
	var out []string
	for _, m := range bench.XDPModes {
		out = append(out, dut+" "+m)
	}
	return out
}

// appEnv builds a lab for the app tests (two reals, net 171), removed
// at the end even when the test fails.
func appEnv(t *testing.T) *bench.Env {
	t.Helper()
	testenv.RequireRoot(t, "builds network namespaces")
	for _, bin := range []string{"nft", "haproxy", "sockperf", "redis-server", "redis-benchmark", "wrk", "/usr/sbin/nginx", "iperf3"} {
		testenv.RequireTool(t, bin)
	}
	return benchtest.Env(t, xlbBinary, topo.Topology{Name: fmt.Sprintf("xlbapptest%d", os.Getpid()%100000), Net: 171, Reals: 2})
}

// appDUT returns a DUT for the app tests by name.
func appDUT(t *testing.T, name string) bench.DUT {
	if name == "haproxy" {
		return &haproxyDUT{}
	}
	d, err := bench.NewDUT(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runAppScenarios sets each DUT up, runs every app scenario through it
// and tears it down; it returns the results by scenario.
func runAppScenarios(t *testing.T, e *bench.Env, duts []string, d time.Duration) map[string][]AppResult {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	all := map[string][]AppResult{}
	for _, name := range duts {
		dut := appDUT(t, name)
		if err := dut.Setup(ctx, e); err != nil {
			t.Fatalf("set %s up: %v", name, err)
		}
		t.Logf("%s: %s", name, dut.Version(e))
		for _, sc := range AppScenarios {
			// three of the ten redis tests: a renamed one, one with
			// a preparation (LPUSH) redis-benchmark reports too
			res, err := RunApp(ctx, e, sc, dut, AppOptions{Duration: d, Progress: func(l string) { t.Log(l) },
				RedisTests: []string{"ping_mbulk", "set", "lrange_100"}})
			if err != nil {
				_ = dut.Teardown(e)
				t.Fatalf("%s through %s: %v", sc, name, err)
			}
			all[sc] = append(all[sc], res...)
		}
		if err := dut.Teardown(e); err != nil {
			t.Errorf("tear %s down: %v", name, err)
		}
	}
	return all
}

// checkAppResults checks every scenario reported every test through
// every DUT with consistent figures. Only iperf3 through a balancer and
// MTU 9000 may have a note instead of figures.
func checkAppResults(t *testing.T, all map[string][]AppResult, duts []string) {
	t.Helper()
	for sc, want := range appTests {
		for _, d := range duts {
			for _, c := range configsOf(t, sc, d) {
				checkConfigResults(t, all[sc], sc, c, want)
			}
		}
	}
	// a DUT attached with XDP runs TCP_RR and TCP_CRR on two CPUs in
	// generic mode too (the Arion table)
	for _, d := range duts {
		if _, ok := appDUT(t, d).(bench.ModeSwitcher); ok {
			places, _ := latencyPlacements()
			p := places[len(places)-1].name
			checkConfigResults(t, all["latency"], "latency", d+" generic", []string{"TCP_RR, " + p, "TCP_CRR, " + p})
		}
	}
}

// checkConfigResults checks that configuration c (a DUT, with its mode)
// reported every test of scenario sc with consistent figures.
func checkConfigResults(t *testing.T, results []AppResult, sc, c string, want []string) {
	t.Helper()
	d := strings.Fields(c)[0]
	var got []string
	for _, a := range results {
		if a.Config() != c {
			continue
		}
		got = append(got, a.Test)
		if a.Scenario != sc || a.Command == "" || a.Unit == "" {
			t.Errorf("%s %s through %s: scenario %q, command %q, unit %q", sc, a.Test, d, a.Scenario, a.Command, a.Unit)
		}
		if a.Note != "" {
			t.Logf("%s through %s: %s", a.Test, d, a.Note)
			// iperf3's two connections may reach two reals; MTU 9000
			// needs multi-buffer XDP
			jumboless := strings.Contains(a.Test, "MTU 9000") && !xdpfrags.Supported()
			if d == "direct" || !(strings.HasPrefix(a.Test, "iperf3") || jumboless) {
				t.Errorf("%s through %s: unexpected note %q", a.Test, d, a.Note)
			}
			continue
		}
		if err := checkApp(a); err != nil {
			t.Errorf("%s through %s: %v", a.Test, d, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s through %s: tests %q, want %q", sc, c, got, want)
	}
}

// checkApp checks one result's figures.
func checkApp(a AppResult) error {
	switch {
	case a.Test == redisLatencyTest:
		if a.MeanUs <= 0 || a.MaxUs < a.MeanUs {
			return fmt.Errorf("want 0 < mean <= max: mean %v max %v", a.MeanUs, a.MaxUs)
		}
	case a.Rate <= 0:
		return fmt.Errorf("rate %v", a.Rate)
	case a.Unit != "Mbps" && (a.P50Us <= 0 || a.P50Us > a.P99Us || a.P99Us > a.MaxUs || a.MeanUs <= 0):
		return fmt.Errorf("want 0 < p50 <= p99 <= max: p50 %v p99 %v max %v mean %v", a.P50Us, a.P99Us, a.MaxUs, a.MeanUs)
	case a.Scenario == "latency" || a.Scenario == "http":
		if len(a.CDFUs) != 101 {
			return fmt.Errorf("CDF of %d points, want 101", len(a.CDFUs))
		}
		if !slices.IsSorted(a.CDFUs) {
			return fmt.Errorf("CDF not monotonic: %v", a.CDFUs)
		}
	}
	return nil
}

// TestAppScenarios runs every app scenario for about a second per test
// through direct, haproxy and xlb, and checks the results, the tables
// and the charts. It times nothing. (nft, the bare forwarder and the
// reference layouts run in the bench's smoke test, xlb bench all
// --quick; CI has no time for both to run every DUT.)
func TestAppScenarios(t *testing.T) {
	e := appEnv(t)
	duts := []string{"direct", "haproxy", "xlb"}
	all := runAppScenarios(t, e, duts, time.Second)
	checkAppResults(t, all, duts)
	dir := t.TempDir()
	for _, sc := range AppScenarios {
		var b bytes.Buffer
		if err := WriteAppTables(&b, sc, all[sc]); err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", b.String())
		charts, err := AppCharts(dir, sc, all[sc])
		if err != nil {
			t.Fatal(err)
		}
		if len(charts) == 0 {
			t.Errorf("%s: no chart", sc)
		}
		for _, c := range charts {
			for _, f := range []string{c, strings.TrimSuffix(c, ".svg") + ".png"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
					t.Errorf("chart %s: %v", f, err)
				}
			}
		}
	}
	if out, err := exec.Command("ip", "-n", e.Topo.LB(), "-br", "addr", "show", "dev", "lo").CombinedOutput(); err != nil || strings.Contains(string(out), e.Topo.VIP().String()) {
		t.Errorf("haproxy left the VIP on lo: %v %s", err, out)
	}
}

// TestAppLongRun measures every app scenario through every DUT with
// tests of XLB_APP_SECONDS (default 5) and writes the tables and
// charts to XLB_APP_REPORT; it runs only when XLB_APP_REPORT is set.
func TestAppLongRun(t *testing.T) {
	out := os.Getenv("XLB_APP_REPORT")
	if out == "" {
		t.Skip("set XLB_APP_REPORT to a directory to run")
	}
	secs := 5
	if s := os.Getenv("XLB_APP_SECONDS"); s != "" {
		fmt.Sscan(s, &secs)
	}
	e := appEnv(t)
	duts := []string{"direct", "xlb", "nft", "haproxy"}
	all := runAppScenarios(t, e, duts, time.Duration(secs)*time.Second)
	checkAppResults(t, all, duts)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, sc := range AppScenarios {
		if err := WriteAppTables(&b, sc, all[sc]); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
		if _, err := AppCharts(out, sc, all[sc]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "apps.md"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
}
