// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"time"
)

// watch runs `ip monitor label route link neigh` and asks Run for an early
// reconcile on each line that may change what is wanted or undo an entry:
// any route or link change, and a deleted neighbour (a flush). Run bounds
// the rate. If ip monitor ends before ctx, it is started again after
// Refresh; the periodic reconcile covers the gap.
func (m *Manager) watch(ctx context.Context) {
	for ctx.Err() == nil {
		if err := m.watchOnce(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("neighbours: ip monitor", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(m.refresh):
		}
	}
}

func (m *Manager) watchOnce(ctx context.Context) error {
	argv := append(append([]string{}, m.ipCmd[1:]...), "monitor", "label", "route", "link", "neigh")
	cmd := exec.CommandContext(ctx, m.ipCmd[0], argv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if triggers(sc.Text()) {
			select {
			case m.kick <- struct{}{}:
			default:
			}
		}
	}
	return cmd.Wait()
}

// triggers reports whether a line of `ip monitor label` calls for an
// early reconcile.
func triggers(line string) bool {
	switch {
	case strings.HasPrefix(line, "[ROUTE]"), strings.HasPrefix(line, "[LINK]"):
		return true
	case strings.HasPrefix(line, "[NEIGH]"):
		return strings.HasPrefix(strings.TrimPrefix(line, "[NEIGH]"), "Deleted ")
	}
	return false
}
