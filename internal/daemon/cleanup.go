// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/hoststate"
	"github.com/xlb-dev/xlb/internal/neigh"
)

// RemoveLeftovers removes a data path no daemon runs any more: the one a
// daemon left forwarding when it was killed or handed over and no
// successor came. It deletes the neighbour entries and host addresses the
// record next to the pins names, detaches the pinned links and removes
// the pins. It refuses while a daemon holds the lock of socket.
func RemoveLeftovers(pinPath, socket string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	unlock, err := lockDaemon(socket)
	if err != nil {
		return fmt.Errorf("%w: stop it instead (SIGTERM removes everything it added)", err)
	}
	defer unlock()
	if err := removeStaleSocket(socket); err != nil {
		return err
	}
	if _, err := os.Stat(pinPath); errors.Is(err, os.ErrNotExist) {
		log.Info("no data path pinned", "pin_path", pinPath)
		return nil
	}
	if err := datapath.OnBPFFS(pinPath); err != nil {
		return err
	}
	rec, err := hoststate.Open(pinPath)
	if err != nil {
		return err
	}
	defer rec.Close()
	var errs []error
	if hops := recordedHops(rec); len(hops) > 0 {
		mgr := neigh.New(neigh.Options{Logger: log, Record: neighRecord{rec}, Adopt: hops, NoMonitor: true})
		errs = append(errs, mgr.Close())
	}
	addrs := hostAddrSet{record: rec}
	errs = append(errs, addrs.prune(nil))
	if err := errors.Join(errs...); err != nil {
		// the pins, the record among them, stay for another try
		return fmt.Errorf("remove what the daemon added to the host (pins kept, try again): %w", err)
	}
	rec.Close()
	return datapath.RemovePinned(pinPath)
}
