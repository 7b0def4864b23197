// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"fmt"
	"strings"
)

// writeArionRedisTable writes the Arion report's redis table, a test per
// row with default and pipelined rates direct and through a DUT, once
// per DUT that ran besides direct; then the redis-cli --latency
// averages.
func writeArionRedisTable(b *strings.Builder, results []AppResult) {
	tests, duts := appOrder(results)
	pipelined := " " + strings.Join(redisRuns[1], " ")
	var names []string // the tests' names, without the pipelined options
	for _, t := range tests {
		if t != redisLatencyTest && !strings.HasSuffix(t, pipelined) {
			names = append(names, strings.TrimPrefix(t, "redis "))
		}
	}
	rate := func(test, dut string) (float64, bool) {
		a, ok := findApp(results, test, dut)
		return a.Rate, ok && a.Note == "" && a.Rate > 0
	}
	cell := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	diff := func(v, direct float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", 100*v/direct)
	}
	for _, d := range duts {
		if d == "direct" || len(names) == 0 {
			continue
		}
		fmt.Fprintf(b, "## Redis via %s (the Arion report's table)\n\n", d)
		fmt.Fprintf(b, "| Test | default direct(req/s) | default via %s(req/s) | difference(%%) | pipelined direct(req/s) | pipelined via %s(req/s) | difference(%%) |\n", d, d)
		b.WriteString("| :--- | :---: | :---: | :---: | :---: | :---: | ---: |\n")
		for _, n := range names {
			dd, dok := rate("redis "+n, "direct")
			vd, vok := rate("redis "+n, d)
			pd, pdok := rate("redis "+n+pipelined, "direct")
			pv, pvok := rate("redis "+n+pipelined, d)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", n, cell(dd, dok), cell(vd, vok), diff(vd, dd, dok && vok),
				cell(pd, pdok), cell(pv, pvok), diff(pv, pd, pdok && pvok))
		}
		b.WriteString("\n")
	}
	var lat []string
	for _, d := range duts {
		if a, ok := findApp(results, redisLatencyTest, d); ok && a.Note == "" {
			lat = append(lat, fmt.Sprintf("%s avg %.2f ms, max %.2f ms", d, a.MeanUs/1000, a.MaxUs/1000))
		}
	}
	if len(lat) > 0 {
		fmt.Fprintf(b, "`redis-cli --latency` (a PING every 10 ms on one connection, over the test's time; the report gives "+
			"--latency-history's 15 s averages): %s.\n\n", strings.Join(lat, "; "))
	}
}
