// SPDX-License-Identifier: Apache-2.0

package apply_test

import (
	"testing"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestCapacityOnLoadedDataPath runs the capacity cases, in order, against
// one data path loaded in the kernel, with the limits of its maps and the
// local IPs its registry holds: each is refused before any map changes.
func TestCapacityOnLoadedDataPath(t *testing.T) {
	testenv.RequireRoot(t, "loads the XDP data path")
	dp, err := datapath.Load(datapath.Options{CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	d := emptyDaemon(dp)
	for _, tc := range capacityCases(dp.Limits()) {
		t.Run(tc.name, func(t *testing.T) { checkRefused(t, d, tc) })
	}
}
