// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// memorySpare is what a measurement leaves free on the machine: it never
// drives it into the OOM killer.
const memorySpare = 8 << 30

// checkTables refuses a row whose connection tables (sized for conns
// IPv4 connections, and the default IPv6 table) would leave less than
// memorySpare of the machine's available memory.
func checkTables(conns uint32) error {
	need := datapath.ConnTableBytes(false, conns) + datapath.ConnTableBytes(true, datapath.DefaultConns6)
	have, err := datapath.MemAvailable()
	if err != nil {
		return err
	}
	if have < need+memorySpare {
		return fmt.Errorf("%d connections need %.1f GiB of connection tables; %.1f GiB is available and %d GiB must stay free",
			conns, float64(need)/(1<<30), float64(have)/(1<<30), memorySpare>>30)
	}
	return nil
}
