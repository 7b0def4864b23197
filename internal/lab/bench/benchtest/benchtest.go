// SPDX-License-Identifier: Apache-2.0

// Package benchtest is what the tests of the bench packages share: a
// bench lab built for one test and removed when it ends. Only tests
// import it.
package benchtest

import (
	"testing"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Env builds the bench lab topology with the xlb binary self, removed when
// the test ends (even when it fails).
func Env(t *testing.T, self string, topology topo.Topology) *bench.Env {
	t.Helper()
	e, err := bench.NewEnv(topology, self)
	if err != nil {
		_ = topology.Down()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("remove lab: %v", err)
		}
	})
	return e
}
