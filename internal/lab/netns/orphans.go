// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RemoveOrphans removes the namespaces named prefix, a process id, a
// dash and anything, whose process is gone: what a test process that was
// killed before its cleanup ran (a timeout, SIGKILL) left behind. A
// namespace of a process that still runs is kept, so parallel test
// processes never remove each other's. It returns the names removed.
func RemoveOrphans(prefix string) ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		if err := IP("netns", "del", e.Name()); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// processRuns tells whether process pid exists (signal 0 reaches it, or
// is refused for permission only).
func processRuns(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
