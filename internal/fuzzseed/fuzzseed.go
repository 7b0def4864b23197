// SPDX-License-Identifier: Apache-2.0

package fuzzseed

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Files returns the contents of the files matching the glob patterns
// (paths relative to the test's package directory). A pattern that
// matches nothing fails the test: a seed corpus that silently went
// away would make the fuzzer start from nothing.
func Files(tb testing.TB, patterns ...string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, path := range glob(tb, patterns) {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// StringLiterals returns the string literals (interpreted and raw) of
// the Go files matching the glob patterns, unquoted, in file order.
func StringLiterals(tb testing.TB, patterns ...string) []string {
	tb.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, path := range glob(tb, patterns) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			tb.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// glob expands the patterns; each must match a file.
func glob(tb testing.TB, patterns []string) []string {
	tb.Helper()
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil {
			tb.Fatalf("seed pattern %q: %v", p, err)
		}
		if len(m) == 0 {
			tb.Fatalf("seed pattern %q matches no file", p)
		}
		out = append(out, m...)
	}
	return out
}
