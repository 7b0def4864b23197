// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// The samples are real output of the tools on Debian 12 (sockperf 3.7,
// redis-benchmark 7.0.15, wrk 4.1.0, iperf 3.12), shortened.

const sockperfSample = "sockperf: \x1b[2;35m== version #3.7-no.git == \x1b[0m\n" +
	`sockperf[CLIENT] send on:sockperf: using recvfrom() to block on socket(s)

[ 0] IP = 10.250.0.2      PORT = 11111 # TCP
sockperf: Warmup stage (sending a few dummy messages)...
sockperf: Starting test...
sockperf: Test end (interrupted by timer)
sockperf: Test ended
sockperf: [Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=21508; ReceivedMessages=21507
sockperf: ========= Printing statistics for Server No: 0
sockperf: [Valid Duration] RunTime=0.550 sec; SentMessages=10124; ReceivedMessages=10124
` + "sockperf: \x1b[2;35m====> avg-rtt=54.334 (std-dev=8.902)\x1b[0m\n" +
	`sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0
sockperf: Summary: Round trip is 54.334 usec
` + "sockperf: \x1b[2;35mTotal 10124 observations\x1b[0m; each percentile contains 101.24 observations\n" +
	`sockperf: ---> <MAX> observation =  832.980
sockperf: ---> percentile 99.999 =  832.980
sockperf: ---> percentile 99.990 =  137.553
sockperf: ---> percentile 99.900 =   93.918
sockperf: ---> percentile 99.000 =   69.252
sockperf: ---> percentile 90.000 =   57.635
sockperf: ---> percentile 75.000 =   55.391
sockperf: ---> percentile 50.000 =   54.009
sockperf: ---> percentile 25.000 =   53.198
sockperf: ---> <MIN> observation =   19.138
`

func TestParseSockperf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string
		want    AppResult
		wantErr string
	}{
		{"full-rtt", sockperfSample, AppResult{Test: "sockperf ping-pong", Unit: "trans/s", Rate: 10124 / 0.550,
			MeanUs: 54.334, P50Us: 54.009, P90Us: 57.635, P99Us: 69.252, MaxUs: 832.980}, ""},
		{"half round trips", strings.ReplaceAll(sockperfSample, "avg-rtt", "avg-latency"), AppResult{}, "avg-rtt"},
		{"no run", "sockperf: ERROR: connect failed\n", AppResult{}, "Valid Duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSockperf(tc.have)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalApp(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseSockperfFullLog(t *testing.T) {
	have := strings.Join(strings.Split(sockperfSample, "\n")[8:], "\n") + `------------------------------
packet, txTime(sec), rxTime(sec), rtt(usec)
0, 2.412194170, 2.412249522, 55.352
1, 2.412249582, 2.412304323, 54.741
2, 2.412304353, 2.412359464, 55.111
------------------------------
`
	got, err := parseSockperfFullLog(strings.NewReader(have))
	if err != nil || !slices.Equal(got, []float64{55.352, 54.741, 55.111}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parseSockperfFullLog(strings.NewReader(sockperfSample)); err == nil {
		t.Error("a log without samples parsed")
	}
}

func TestParseRedisCSV(t *testing.T) {
	const header = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n"
	for _, tc := range []struct {
		name    string
		have    string
		extra   []string
		want    []AppResult
		wantErr string
	}{
		{"default", header + `"SET","91324.20","0.289","0.136","0.287","0.343","0.447","1.727"
"GET","87719.30","0.294","0.072","0.287","0.359","0.455","2.367"
`, nil, []AppResult{
			{Test: "redis SET", Unit: "req/s", Rate: 91324.20, MeanUs: 289, P50Us: 287, P95Us: 343, P99Us: 447, MaxUs: 1727},
			{Test: "redis GET", Unit: "req/s", Rate: 87719.30, MeanUs: 294, P50Us: 287, P95Us: 359, P99Us: 455, MaxUs: 2367},
		}, ""},
		{"pipelined", header + `"SET","990099.00","0.752","0.368","0.695","0.967","3.111","4.871"` + "\n", []string{"-d", "1400", "-P", "50"}, []AppResult{
			{Test: "redis SET -d 1400 -P 50", Unit: "req/s", Rate: 990099, MeanUs: 752, P50Us: 695, P95Us: 967, P99Us: 3111, MaxUs: 4871},
		}, ""},
		{"names", header + `"PING_MBULK","95238.09","0.289","0.088","0.263","0.463","0.727","0.935"
"LPUSH (needed to benchmark LRANGE)","111111.12","0.260","0.072","0.247","0.383","0.591","0.895"
"LRANGE_100 (first 100 elements)","62500.00","0.697","0.264","0.663","0.967","1.295","1.615"
`, nil, []AppResult{
			{Test: "redis PING_BULK", Unit: "req/s", Rate: 95238.09, MeanUs: 289, P50Us: 263, P95Us: 463, P99Us: 727, MaxUs: 935},
			{Test: "redis LPUSH", Unit: "req/s", Rate: 111111.12, MeanUs: 260, P50Us: 247, P95Us: 383, P99Us: 591, MaxUs: 895},
			{Test: "redis LRANGE_100", Unit: "req/s", Rate: 62500, MeanUs: 697, P50Us: 663, P95Us: 967, P99Us: 1295, MaxUs: 1615},
		}, ""},
		{"redis 6", `"SET","91324.20"` + "\n" + `"GET","87719.30"` + "\n", nil, nil, "lacks"},
		{"no connection", "Could not connect to Redis at 10.171.0.10:6379: Connection refused\n", nil, nil, "without results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRedisCSV(tc.have, tc.extra)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, equalApp) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFindRedisTest(t *testing.T) {
	results := []AppResult{{Test: "redis PING_BULK -d 1400 -P 50"}, {Test: "redis LPUSH -d 1400 -P 50"}, {Test: "redis LRANGE_100 -d 1400 -P 50"}}
	for test, want := range map[string]string{"ping_mbulk": "redis PING_BULK -d 1400 -P 50", "lrange_100": "redis LRANGE_100 -d 1400 -P 50", "set": ""} {
		a, ok := findRedisTest(results, test)
		if ok != (want != "") || a.Test != want {
			t.Errorf("%s: %q %v, want %q", test, a.Test, ok, want)
		}
	}
}

func TestParseRedisLatency(t *testing.T) {
	a, err := parseRedisLatency("0 1 0.18 196\n")
	if err != nil || a.Test != redisLatencyTest || a.MeanUs != 180 || a.MaxUs != 1000 || a.Rate != 0 {
		t.Errorf("got %+v, %v", a, err)
	}
	for _, bad := range []string{"", "0 1 0.18", "0 1 x 196", "0 0 0.00 0", "Could not connect to Redis"} {
		if _, err := parseRedisLatency(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestArionRRTable(t *testing.T) {
	var results []AppResult
	for _, c := range []struct {
		dut, mode string
		rate, us  float64
	}{{"direct", "", 40000, 25}, {"xlb", "", 36000, 27.5}, {"xlb", "generic", 30000, 33}} {
		results = append(results,
			AppResult{Test: "TCP_RR, two CPUs", DUT: c.dut, Mode: c.mode, Rate: c.rate, MeanUs: c.us},
			AppResult{Test: "TCP_CRR, two CPUs", DUT: c.dut, Mode: c.mode, Rate: c.rate / 10, MeanUs: c.us * 10},
			AppResult{Test: "TCP_RR, one CPU", DUT: c.dut, Mode: c.mode, Rate: 1, MeanUs: 1})
	}
	var b strings.Builder
	writeArionRRTable(&b, results)
	for _, want := range []string{
		"| direct | 40000 | 100.0% | 25.0 | +0.0 | 4000 | 100.0% | 250.0 | +0.0 |\n",
		"| xlb | 36000 | 90.0% | 27.5 | +2.5 | 3600 | 90.0% | 275.0 | +25.0 |\n",
		"| xlb generic | 30000 | 75.0% | 33.0 | +8.0 | 3000 | 75.0% | 330.0 | +80.0 |\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	writeArionRRTable(&b, results[3:]) // no direct: no table
	if b.Len() != 0 {
		t.Errorf("a table without direct:\n%s", b.String())
	}
}

func TestArionRedisTable(t *testing.T) {
	var results []AppResult
	for _, d := range []struct {
		dut  string
		rate float64
	}{{"direct", 1000}, {"xlb", 900}} {
		results = append(results,
			AppResult{Test: "redis PING_BULK", DUT: d.dut, Unit: "req/s", Rate: d.rate},
			AppResult{Test: "redis PING_BULK -d 1400 -P 50", DUT: d.dut, Unit: "req/s", Rate: 10 * d.rate},
			AppResult{Test: redisLatencyTest, DUT: d.dut, Unit: "ms", MeanUs: d.rate / 10, MaxUs: 1000})
	}
	var b strings.Builder
	writeArionRedisTable(&b, results)
	for _, want := range []string{
		"## Redis via xlb (the Arion report's table)",
		"| PING_BULK | 1000.00 | 900.00 | 90.00% | 10000.00 | 9000.00 | 90.00% |\n",
		"direct avg 0.10 ms, max 1.00 ms; xlb avg 0.09 ms, max 1.00 ms.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "via direct") || strings.Contains(b.String(), "| redis-cli") {
		t.Errorf("table has direct as a DUT or the latency as a test:\n%s", b.String())
	}
}

const wrkSample = `Running 1s test @ http://10.250.0.2:8080/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   166.30us   73.52us   2.43ms   82.34%
    Req/Sec   109.56k     1.16k  111.64k    60.00%
  Latency Distribution
     50%  141.00us
     75%  154.00us
     90%  279.00us
     99%    1.06ms
  108905 requests in 1.00s, 16.41MB read
Requests/sec: 108840.24
Transfer/sec:     16.40MB
`

func TestParseWrk(t *testing.T) {
	var cdf strings.Builder
	var wantCDF []float64
	for p := 0; p <= 100; p++ {
		cdf.WriteString("xlb-cdf " + strconv.Itoa(p) + " " + strconv.Itoa(100+p) + "\n")
		wantCDF = append(wantCDF, float64(100+p))
	}
	base := AppResult{Test: "wrk", Unit: "req/s", Rate: 108840.24, P50Us: 141, P90Us: 279, P99Us: 1060}
	withLua := base
	withLua.MeanUs, withLua.MaxUs, withLua.CDFUs = 166.303, 2431, wantCDF
	withErrors := base
	withErrors.Errors = 3 + 7 + 5
	for _, tc := range []struct {
		name    string
		have    string
		want    AppResult
		wantErr string
	}{
		{"plain", wrkSample, base, ""},
		{"with script", wrkSample + "xlb-summary requests=108905 duration_us=1000595 mean_us=166.303 max_us=2431\n" + cdf.String(), withLua, ""},
		{"errors", strings.Replace(wrkSample, "Requests/sec", "  Socket errors: connect 3, read 7, write 0, timeout 0\n  Non-2xx or 3xx responses: 5\nRequests/sec", 1), withErrors, ""},
		{"seconds", strings.Replace(wrkSample, "1.06ms", "2.50s", 1), func() AppResult { a := base; a.P99Us = 2.5e6; return a }(), ""},
		{"no server", "unable to connect to 10.171.0.10:8080 Connection refused\n", AppResult{}, "Requests/sec"},
		{"short cdf", wrkSample + "xlb-cdf 0 10\nxlb-cdf 1 11\n", AppResult{}, "101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWrk(tc.have)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalApp(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

const iperf3Sample = `{"start": {"connected": [{"socket": 5, "local_host": "10.250.0.1", "local_port": 53466, "remote_host": "10.250.0.2", "remote_port": 5201}],
 "version": "iperf 3.12", "tcp_mss_default": 1448, "test_start": {"protocol": "TCP", "num_streams": 1, "blksize": 131072, "duration": 2}},
 "intervals": [{"sum": {"start": 0, "end": 1.00022, "bytes": 2631139328, "bits_per_second": 21044486075.758175, "retransmits": 11677, "sender": true}}],
 "end": {"streams": [{"sender": {"socket": 5, "bytes": 5318115328, "bits_per_second": 21271270120.87323, "retransmits": 23576, "mean_rtt": 40, "sender": true}}],
 "sum_sent": {"start": 0, "end": 2.000112, "seconds": 2.000112, "bytes": 5318115328, "bits_per_second": 21271270120.87323, "retransmits": 23576, "sender": true},
 "sum_received": {"start": 0, "end": 2.000599, "seconds": 2.000599, "bytes": 5316280320, "bits_per_second": 21258754283.092216, "sender": true},
 "sender_tcp_congestion": "bbr", "receiver_tcp_congestion": "bbr"}}`

func TestParseIperf3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string
		want    AppResult
		wantErr string
	}{
		{"stream", iperf3Sample, AppResult{Unit: "Mbps", Rate: 21258.754283092216, Retransmits: 23576}, ""},
		{"refused", `{"start": {"connected": [], "version": "iperf 3.12"}, "intervals": [], "end": {},
	"error": "unable to connect to server: Connection refused"}`, AppResult{}, "Connection refused"},
		{"killed", "", AppResult{}, "JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIperf3(tc.have)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalApp(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseListensIn(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 020AAB0A:1451 020AAB0A:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
`
	for _, tc := range []struct {
		name string
		port int
		want bool
	}{{"listening", 8080, true}, {"established only", 5201, false}, {"absent", 6379, false}} {
		if got := listensIn(table, tc.port); got != tc.want {
			t.Errorf("%s: port %d: got %v", tc.name, tc.port, got)
		}
	}
}

func TestAppLatencyStats(t *testing.T) {
	var samples []float64
	for i := 1000; i >= 1; i-- {
		samples = append(samples, float64(i))
	}
	var a AppResult
	fillLatency(&a, samples)
	if a.MeanUs != 500.5 || a.P50Us != 500 || a.P90Us != 900 || a.P99Us != 990 || a.MaxUs != 1000 {
		t.Errorf("mean %v p50 %v p90 %v p99 %v max %v", a.MeanUs, a.P50Us, a.P90Us, a.P99Us, a.MaxUs)
	}
	if len(a.CDFUs) != 101 || a.CDFUs[0] != 1 || a.CDFUs[100] != 1000 || !slices.IsSorted(a.CDFUs) {
		t.Errorf("CDF %v", a.CDFUs)
	}
	if redisRequests(90000, 5) != 450000 || redisRequests(10, 1) != 1000 || redisRequests(1e9, 60) != 20e6 {
		t.Error("redisRequests out of bounds")
	}
}

func TestAppTables(t *testing.T) {
	results := []AppResult{
		{Scenario: "latency", Test: "TCP_RR", DUT: "xlb", Rate: 15000, Unit: "trans/s", MeanUs: 60, P50Us: 55, P90Us: 70, P99Us: 100, MaxUs: 900},
		{Scenario: "latency", Test: "TCP_RR", DUT: "direct", Rate: 20000, Unit: "trans/s", MeanUs: 50, P50Us: 50, P90Us: 56, P99Us: 80, MaxUs: 450},
		{Scenario: "latency", Test: "TCP_CRR", DUT: "xlb", Rate: 4000, Unit: "trans/s", MeanUs: 250, P50Us: 200, P90Us: 300, P99Us: 1000, MaxUs: 2000},
		{Scenario: "latency", Test: "sockperf ping-pong", DUT: "nft", Unit: "trans/s", Note: "why not"},
		{Scenario: "latency", Test: "TCP_RR", DUT: "xdp-fwd", Rate: 12000, Unit: "trans/s", MeanUs: 70, P50Us: 65, P90Us: 80, P99Us: 110, MaxUs: 900},
	}
	var b bytes.Buffer
	if err := WriteAppTables(&b, "latency", results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| test | DUT | trans/s | mean µs | p50 µs | p90 µs | p99 µs | max µs |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
		"| TCP_RR | direct | 20000 | 50.0 | 50.0 | 56.0 | 80.0 | 450.0 |\n| TCP_RR | xlb | 15000 (75%) | 60.0 (120%) | 55.0 (110%) | 70.0 (125%) | 100.0 (125%) | 900.0 (200%) |\n",
		"| TCP_CRR | xlb | 4000 | 250.0 | 200.0 | 300.0 | 1000.0 | 2000.0 |\n",
		"| sockperf ping-pong | nft | n/a | n/a | n/a | n/a | n/a | n/a |\n",
		"- sockperf ping-pong, nft: why not",
		"Against the XDP hop alone (xdp-fwd, the same links and mode), trans/s:\n- xlb: TCP_RR 1.25x\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteAppTables(&b, "throughput", []AppResult{
		{Test: "iperf3 MTU 1500", DUT: "direct", Rate: 9000, Unit: "Mbps"},
		{Test: "iperf3 MTU 1500", DUT: "haproxy", Rate: 3000, Unit: "Mbps", Retransmits: 12},
	}); err != nil {
		t.Fatal(err)
	}
	if want := "| iperf3 MTU 1500 | haproxy | 3000 (33%) | 12 |"; !strings.Contains(b.String(), want) {
		t.Errorf("tables lack %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "Against the XDP hop") {
		t.Errorf("tables compare with an XDP hop that did not run:\n%s", b.String())
	}
	if err := WriteAppTables(&b, "pps", nil); err == nil {
		t.Error("WriteAppTables took scenario pps")
	}
}

// equalApp compares results, figures within a millionth.
func equalApp(a, b AppResult) bool {
	near := func(x, y float64) bool { return x == y || (x-y)*(x-y) < 1e-12*(x*x+y*y) }
	return a.Test == b.Test && a.Unit == b.Unit && near(a.Rate, b.Rate) && near(a.MeanUs, b.MeanUs) &&
		near(a.P50Us, b.P50Us) && near(a.P90Us, b.P90Us) && near(a.P95Us, b.P95Us) && near(a.P99Us, b.P99Us) &&
		near(a.MaxUs, b.MaxUs) && a.Errors == b.Errors && a.Retransmits == b.Retransmits && slices.Equal(a.CDFUs, b.CDFUs)
}

// TestSetupSweepTable: a row per DUT and body size of the sweep, with
// the client's rates; the keep-alive test has none.
func TestSetupSweepTable(t *testing.T) {
	links := &bench.LinkRates{ClientTxPPS: 50000, ClientRxPPS: 60000, ClientTxBits: 20e6, ClientRxBits: 90e6}
	results := []AppResult{
		{Test: "wrk", DUT: "xlb", Rate: 90000},
		{Test: "HTTP GET 64 B, a connection each", DUT: "xlb", Rate: 8000, PayloadSize: 64, Links: links, Errors: 2},
		{Test: "HTTP GET 64 B, a connection each", DUT: "direct", Rate: 9000, PayloadSize: 64, Links: links},
	}
	var b strings.Builder
	writeSetupSweep(&b, results)
	for _, want := range []string{"(the WARP17 HTTP charts)",
		"| direct | 64 | 9000 | 50000 | 60000 | 20.0 | 90.0 | 0 |",
		"| xlb | 64 | 8000 | 50000 | 60000 | 20.0 | 90.0 | 2 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	writeSetupSweep(&b, results[:1])
	if b.Len() != 0 {
		t.Errorf("no sweep, and a table:\n%s", b.String())
	}
}
