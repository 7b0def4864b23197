// SPDX-License-Identifier: Apache-2.0

package run

import (
	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	"github.com/xlb-dev/xlb/internal/lab/bench/frames"
)

// NewDUT returns the DUT called name for a scenario, any of them: the
// bare XDP forwarder, haproxy of the connection scenarios, xlb in the
// scenario's shape (bench.XLBShapeFor), or one of the lab's own (bench.NewDUT,
// which names what it takes when name is none of them).
func NewDUT(name, scenario string, o bench.Options) (bench.DUT, error) {
	switch name {
	case "xlb":
		return bench.NewXLBDUT(bench.XLBShapeFor(scenario, o)), nil
	case "xlb-synproxy", "xlb-toa", "xlb-proxy-v2":
		return bench.NewXLBDUT(bench.XLBVariants[name](bench.XLBShapeFor(scenario, o))), nil
	case "xdp-fwd":
		return frames.NewFwdDUT(), nil
	case "xdp-fixed":
		return frames.NewFixedFwdDUT(), nil
	case "haproxy":
		return apps.NewHAProxyDUT(), nil
	}
	return bench.NewDUT(name)
}
