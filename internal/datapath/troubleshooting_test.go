// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"os"
	"strings"
	"testing"
)

// TestTroubleshootingCoversEveryCounter: docs/troubleshooting.md has a
// row for every drop reason and every event the data path counts.
func TestTroubleshootingCoversEveryCounter(t *testing.T) {
	b, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, names := range [][]string{DropReasonNames, EventNames} {
		for _, n := range names {
			if !strings.Contains(page, "\n| `"+n+"` |") {
				t.Errorf("docs/troubleshooting.md has no row for %s", n)
			}
		}
	}
}
