// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// redisRuns are the redis-benchmark runs: default 3-byte values one
// request at a time, then 1400-byte values 50 requests a pipeline.
var redisRuns = [][]string{nil, {"-d", "1400", "-P", "50"}}

// redisClients is redis-benchmark's connection count (-c).
const redisClients = 50

// RedisTests are the redis-benchmark tests (-t) of the Arion report's
// table, in its order. redis-benchmark 6 renamed its PING_BULK to
// PING_MBULK (the report's name is kept in the results).
var RedisTests = []string{"ping_inline", "ping_mbulk", "set", "get", "incr", "sadd", "zadd", "zpopmin", "lrange_100", "lrange_600"}

// redis runs redis-server in the reals, redis-benchmark's tests in the
// client, then redis-cli --latency. redis-benchmark runs a request
// count, not a time: a first run of every test with a request a client
// and pipeline slot measures each rate, then each test runs alone for
// about the test duration at its rate.
func (r *appRun) redis() ([]AppResult, error) {
	port := strconv.Itoa(appPortRedis)
	if err := r.startServers(appPortRedis, "redis-server", "--port", port, "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--bind", "0.0.0.0", "--daemonize", "no", "--dir", r.dir, "--logfile", ""); err != nil {
		return nil, err
	}
	tests := r.o.RedisTests
	if len(tests) == 0 {
		tests = RedisTests
	}
	var res []AppResult
	for _, extra := range redisRuns {
		pipeline := 1
		for i := 0; i+1 < len(extra); i++ {
			if extra[i] == "-P" {
				pipeline, _ = strconv.Atoi(extra[i+1])
			}
		}
		args := func(n int, tests ...string) []string {
			return append([]string{"-h", r.target.String(), "-p", port, "-c", strconv.Itoa(redisClients),
				"-n", strconv.Itoa(n), "-t", strings.Join(tests, ","), "--csv"}, extra...)
		}
		out, err := r.client("redis-benchmark", args(redisClients*pipeline, tests...)...)
		if err != nil {
			return res, err
		}
		first, err := parseRedisCSV(out, extra)
		if err != nil {
			return res, fmt.Errorf("redis-benchmark to %s: %w", r.target, err)
		}
		for _, test := range tests {
			rate := math.Inf(1)
			if a, ok := findRedisTest(first, test); ok {
				rate = a.Rate
			}
			n := redisRequests(rate, r.o.Duration.Seconds())
			out, err = r.client("redis-benchmark", args(n, test)...)
			if err != nil {
				return res, err
			}
			got, err := parseRedisCSV(out, extra)
			if err != nil {
				return res, fmt.Errorf("redis-benchmark to %s: %w", r.target, err)
			}
			a, ok := findRedisTest(got, test)
			if !ok {
				return res, fmt.Errorf("redis-benchmark -t %s to %s: no such test in its output: %s", test, r.target, lastLines(out, 3))
			}
			a.Command = commandLine("redis-benchmark", args(n, test))
			r.progress("%s: %.0f req/s, p50 %.0f µs, p99 %.0f µs", a.Test, a.Rate, a.P50Us, a.P99Us)
			res = append(res, a)
		}
	}
	a, err := r.redisLatency()
	if err != nil {
		return res, err
	}
	return append(res, a), r.stopAll()
}

// redisLatencyTest names the redis-cli --latency result.
const redisLatencyTest = "redis-cli --latency"

// redisLatency runs redis-cli --latency for the test duration: a PING
// every 10 ms on one connection. Without a terminal it prints one line,
// "min max avg samples" in ms, as the Arion report's --latency-history
// gives for each 15 s.
func (r *appRun) redisLatency() (AppResult, error) {
	args := []string{"-h", r.target.String(), "-p", strconv.Itoa(appPortRedis), "--latency", "-i", strconv.Itoa(r.seconds())}
	out, err := r.client("redis-cli", args...)
	if err != nil {
		return AppResult{}, err
	}
	a, err := parseRedisLatency(out)
	if err != nil {
		return AppResult{}, fmt.Errorf("redis-cli --latency to %s: %w", r.target, err)
	}
	a.Command = commandLine("redis-cli", args)
	r.progress("%s: avg %.0f µs, max %.0f µs", a.Test, a.MeanUs, a.MaxUs)
	return a, nil
}

// parseRedisLatency reads redis-cli --latency's line without a terminal:
// "min max avg samples", in ms. Rate is the pings per second.
func parseRedisLatency(out string) (AppResult, error) {
	a := AppResult{Test: redisLatencyTest, Unit: "pings/s"}
	f := strings.Fields(out)
	if len(f) != 4 {
		return a, fmt.Errorf("want \"min max avg samples\", got %q", strings.TrimSpace(out))
	}
	var v [4]float64
	for i, s := range f {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return a, fmt.Errorf("%q: %w", strings.TrimSpace(out), err)
		}
		v[i] = x
	}
	if v[3] == 0 {
		return a, fmt.Errorf("no samples: %q", strings.TrimSpace(out))
	}
	a.MeanUs, a.MaxUs = v[2]*1000, v[1]*1000
	return a, nil
}

// findRedisTest is the result of redis-benchmark test (as -t names it)
// among results.
func findRedisTest(results []AppResult, test string) (AppResult, bool) {
	for _, a := range results {
		if redisName(strings.ToUpper(test)) == strings.Fields(strings.TrimPrefix(a.Test, "redis "))[0] {
			return a, true
		}
	}
	return AppResult{}, false
}

// redisName is a test's name in the results: redis-benchmark's without
// what it says in brackets ("LRANGE_100 (first 100 elements)"), and the
// report's PING_BULK for PING_MBULK.
func redisName(name string) string {
	name, _, _ = strings.Cut(name, " (")
	if name == "PING_MBULK" {
		return "PING_BULK"
	}
	return name
}

// redisRequests is the request count that takes about secs at rate,
// within 1000 and 20 million.
func redisRequests(rate, secs float64) int {
	n := rate * secs
	if math.IsNaN(n) || math.IsInf(n, 0) {
		n = 1000
	}
	return int(min(max(n, 1000), 20e6))
}

// parseRedisCSV reads redis-benchmark --csv output (redis 7: "test",
// "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
// "p95_latency_ms", "p99_latency_ms", "max_latency_ms") into a result
// per test, named "redis SET" and so on with the extra options after.
func parseRedisCSV(out string, extra []string) ([]AppResult, error) {
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("--csv output: %w: %s", err, lastLines(out, 3))
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("--csv output without results: %s", lastLines(out, 3))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"test", "rps", "avg_latency_ms", "p50_latency_ms", "p95_latency_ms", "p99_latency_ms", "max_latency_ms"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("--csv header %q lacks %q (redis-benchmark before 7?)", strings.Join(rows[0], ","), h)
		}
	}
	suffix := ""
	if len(extra) > 0 {
		suffix = " " + strings.Join(extra, " ")
	}
	var res []AppResult
	for _, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			return nil, fmt.Errorf("--csv row %q: %d fields for %d columns", strings.Join(row, ","), len(row), len(rows[0]))
		}
		num := func(h string, scale float64) (float64, error) {
			v, err := strconv.ParseFloat(row[col[h]], 64)
			if err != nil {
				return 0, fmt.Errorf("%s of %s: %w", h, row[col["test"]], err)
			}
			return v * scale, nil
		}
		a := AppResult{Test: "redis " + redisName(row[col["test"]]) + suffix, Unit: "req/s"}
		for _, f := range []struct {
			dst   *float64
			h     string
			scale float64
		}{
			{&a.Rate, "rps", 1}, {&a.MeanUs, "avg_latency_ms", 1000}, {&a.P50Us, "p50_latency_ms", 1000},
			{&a.P95Us, "p95_latency_ms", 1000}, {&a.P99Us, "p99_latency_ms", 1000}, {&a.MaxUs, "max_latency_ms", 1000},
		} {
			if *f.dst, err = num(f.h, f.scale); err != nil {
				return nil, err
			}
		}
		res = append(res, a)
	}
	return res, nil
}
