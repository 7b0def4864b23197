// SPDX-License-Identifier: Apache-2.0

package cfgscale

import (
	"strings"
	"testing"

	xlbconfig "github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// TestConfigsOfARowKeepTheirCapacities: every file of a row, the empty
// one included, asks for the capacities of the row's size (a running
// daemon refuses another), and each validates.
func TestConfigsOfARowKeepTheirCapacities(t *testing.T) {
	o := withDefaults(Options{Lab: topo.Topology{Name: "t", Net: 200, Reals: 3}})
	for _, n := range []int{10000, 0} {
		doc := config(o, 10000, n, n/2)
		if !strings.Contains(doc, "max_services: 16384\nmax_reals: 32768\n") {
			t.Errorf("%d of 10000 services: capacities not the row's:\n%.200s", n, doc)
		}
		c, err := xlbconfig.Parse([]byte(doc))
		if err == nil {
			var d *xlbconfig.Desired
			d, err = c.Desired()
			if err == nil && len(d.Services) != n {
				t.Errorf("%d services in the file, want %d", len(d.Services), n)
			}
		}
		if err != nil {
			t.Errorf("%d services: %v", n, err)
		}
	}
}
