// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/config"
)

// overrideMode applies the command line's --xdp-mode (flag; "" when not
// given) to a configuration the daemon is given after its start (a
// SIGHUP reload, an apply, an edit), as Run applied it to the file it
// started with, whose own xdp_mode was fileMode. A configuration that
// leaves xdp_mode out, or gives the one the starting file gave, runs in
// the flag's mode; one that asks for another mode than the daemon's is
// refused, as a running daemon cannot change its XDP mode.
func overrideMode(cfg *config.Config, flag, fileMode string) error {
	if flag == "" {
		return nil // the file's mode rules; apply.Move refuses a change
	}
	switch cfg.XDPMode {
	case "", flag, fileMode:
		cfg.XDPMode = flag
		return nil
	}
	return &config.ValidationError{Problems: []string{fmt.Sprintf(
		"xdp_mode: %q, but the daemon runs in %q mode (xlb daemon --xdp-mode %s); leave xdp_mode out or restart the daemon to change it",
		cfg.XDPMode, flag, flag)}}
}
