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

// redis runs redis-server in the reals and redis-benchmark SET and GET
// in the client. redis-benchmark runs a request count, not a time: a
// short first run measures the rate, the second runs about the test
// duration at that rate.
func (r *appRun) redis() ([]AppResult, error) {
	port := strconv.Itoa(appPortRedis)
	if err := r.startServers(appPortRedis, "redis-server", "--port", port, "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--bind", "0.0.0.0", "--daemonize", "no", "--dir", r.dir, "--logfile", ""); err != nil {
		return nil, err
	}
	var res []AppResult
	for _, extra := range redisRuns {
		pipeline := 1
		for i := 0; i+1 < len(extra); i++ {
			if extra[i] == "-P" {
				pipeline, _ = strconv.Atoi(extra[i+1])
			}
		}
		args := func(n int) []string {
			return append([]string{"-h", r.target.String(), "-p", port, "-c", strconv.Itoa(redisClients),
				"-n", strconv.Itoa(n), "-t", "set,get", "--csv"}, extra...)
		}
		out, err := r.client("redis-benchmark", args(5000*pipeline)...)
		if err != nil {
			return res, err
		}
		first, err := parseRedisCSV(out, extra)
		if err != nil {
			return res, fmt.Errorf("redis-benchmark to %s: %w", r.target, err)
		}
		rate := math.Inf(1)
		for _, a := range first {
			rate = min(rate, a.Rate)
		}
		n := redisRequests(rate, r.o.Duration.Seconds())
		r.progress("redis-benchmark %s to %s: %d requests a test", strings.Join(extra, " "), r.target, n)
		out, err = r.client("redis-benchmark", args(n)...)
		if err != nil {
			return res, err
		}
		tests, err := parseRedisCSV(out, extra)
		if err != nil {
			return res, fmt.Errorf("redis-benchmark to %s: %w", r.target, err)
		}
		for _, a := range tests {
			a.Command = commandLine("redis-benchmark", args(n))
			r.progress("%s: %.0f req/s, p50 %.0f µs, p99 %.0f µs", a.Test, a.Rate, a.P50Us, a.P99Us)
			res = append(res, a)
		}
	}
	return res, r.stopAll()
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
		a := AppResult{Test: "redis " + row[col["test"]] + suffix, Unit: "req/s"}
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
