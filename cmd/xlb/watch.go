// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/listing"
)

// watchFlags are the refresh period and frame count of xlb top and xlb
// stats --watch.
type watchFlags struct {
	interval time.Duration
	count    int
}

func (f *watchFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.interval, "interval", time.Second, "time between two readings")
	cmd.Flags().IntVar(&f.count, "count", 0, "frames to print, then exit (0: until interrupted)")
}

func (f *watchFlags) check() error {
	if f.interval < 100*time.Millisecond || f.interval > time.Hour {
		return usageError{fmt.Errorf("--interval %v: want 100ms to 1h", f.interval)}
	}
	if f.count < 0 {
		return usageError{fmt.Errorf("--count %d: want 0 (until interrupted) or more", f.count)}
	}
	return nil
}

// read takes one reading of the daemon's services and counters.
func read(cmd *cobra.Command, cl *api.Client) (listing.Reading, error) {
	r := listing.Reading{At: time.Now()}
	var err error
	if r.Services, err = cl.Services(cmd.Context()); err != nil {
		return r, daemonError(err)
	}
	if r.Stats, err = cl.Stats(cmd.Context()); err != nil {
		return r, daemonError(err)
	}
	return r, nil
}

// watch prints a frame every interval from two readings an interval
// apart, count frames or until interrupted; on a terminal each frame
// replaces the last.
func (f *watchFlags) watch(cmd *cobra.Command, cl *api.Client, frame func(prev, cur listing.Reading) error) error {
	if err := f.check(); err != nil {
		return err
	}
	prev, err := read(cmd, cl)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	tty := false
	if file, ok := out.(*os.File); ok {
		_, terr := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
		tty = terr == nil
	}
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for n := 0; f.count == 0 || n < f.count; n++ {
		select {
		case <-cmd.Context().Done():
			return nil
		case <-tick.C:
		}
		cur, err := read(cmd, cl)
		if err != nil {
			return err
		}
		if tty {
			fmt.Fprint(out, "\033[H\033[2J")
		} else if n > 0 {
			fmt.Fprintln(out)
		}
		if err := frame(prev, cur); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}

func newTopCmd() *cobra.Command {
	var c clientFlags
	var wf watchFlags
	cmd := &cobra.Command{
		Use:   "top [--interval 1s] [--count N]",
		Short: "Show rates per service and real, drops per second and table occupancy, refreshed every interval",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return wf.watch(cmd, c.client(), func(prev, cur listing.Reading) error {
				return listing.WriteTop(cmd.OutOrStdout(), prev, cur)
			})
		},
	}
	wf.register(cmd)
	c.register(cmd)
	return cmd
}
