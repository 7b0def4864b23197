// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// BenchmarkDatapathCost prints the per-packet cost table of
// docs/BENCHMARKS.md (Measure, also `xlb bench datapath`). Run it with
// `make bench`; XLB_BENCH_MAX_CONNS stops at a smaller table (10M needs
// about 2.1 GiB of memory); XLB_BENCH_ROWS (e.g. "fwd,rev") measures only
// some rows, for profiling; XLB_BENCH_OUT also writes the table there.
func BenchmarkDatapathCost(b *testing.B) {
	testenv.RequireRoot(b, "loads BPF programs and creates network namespaces")
	o := Options{Namespace: fmt.Sprintf("xlbt-%d-cost", os.Getpid())}
	maxConns := 10_000_000
	if v := os.Getenv("XLB_BENCH_MAX_CONNS"); v != "" {
		fmt.Sscan(v, &maxConns)
	}
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000} {
		if n <= maxConns {
			o.Conns = append(o.Conns, n)
		}
	}
	if rows := os.Getenv("XLB_BENCH_ROWS"); rows != "" {
		o.Rows = strings.Split(rows, ",")
	}
	table, err := Measure(o, func(s string) { b.Log(s) })
	if err != nil {
		b.Fatal(err)
	}
	fmt.Println(table.Markdown())
	if out := os.Getenv("XLB_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.Markdown()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
