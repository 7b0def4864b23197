// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"testing"
)

// TestBuildRecord: a results file always says whether the tree was
// modified, and only a revision without changes is clean.
func TestBuildRecord(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build Build
		json  string
		clean bool
	}{
		{"clean", Build{Version: "v1", Revision: "abc"}, `{"version":"v1","revision":"abc","modified":false}`, true},
		{"modified", Build{Version: "v1", Revision: "abc", Modified: true}, `{"version":"v1","revision":"abc","modified":true}`, false},
		{"no commit", Build{Version: "devel"}, `{"version":"devel","modified":false}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.build)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("recorded as %s, want %s", b, tc.json)
			}
			if got := tc.build.Clean(); got != tc.clean {
				t.Errorf("Clean() = %v, want %v", got, tc.clean)
			}
		})
	}
}
