// SPDX-License-Identifier: Apache-2.0

package dpcost

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/datapath"
)

// memorySpare is what a measurement leaves free on the machine: it never
// drives it into the OOM killer.
const memorySpare = 8 << 30

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read available memory: %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read available memory: no MemAvailable in /proc/meminfo: %v", sc.Err())
}

// checkTables refuses a row whose connection tables (sized for conns
// IPv4 connections, and the default IPv6 table) would leave less than
// memorySpare of the machine's available memory.
func checkTables(conns uint32) error {
	need := datapath.ConnTableBytes(false, conns) + datapath.ConnTableBytes(true, datapath.DefaultConns6)
	have, err := memAvailable()
	if err != nil {
		return err
	}
	if have < need+memorySpare {
		return fmt.Errorf("%d connections need %.1f GiB of connection tables; %.1f GiB is available and %d GiB must stay free",
			conns, float64(need)/(1<<30), float64(have)/(1<<30), memorySpare>>30)
	}
	return nil
}
