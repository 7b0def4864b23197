// SPDX-License-Identifier: Apache-2.0

package fuzzseed

import (
	"slices"
	"testing"
)

// aSeed and rawSeed are literals the test finds in this very file.
const (
	aSeed   = "seed \"one\"\n"
	rawSeed = `seed two`
)

func TestStringLiterals(t *testing.T) {
	got := StringLiterals(t, "fuzzseed_test.go")
	for _, want := range []string{aSeed, rawSeed} {
		if !slices.Contains(got, want) {
			t.Errorf("%q not among the literals %q", want, got)
		}
	}
}

func TestFiles(t *testing.T) {
	got := Files(t, "doc.go", "fuzzseed*.go")
	if len(got) != 3 {
		t.Errorf("%d files, want 3", len(got))
	}
}
