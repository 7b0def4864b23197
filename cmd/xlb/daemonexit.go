// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// newDaemonExitCmd is the unit file's ExecStop: it tells the daemon which
// way to go. systemd runs ExecStop for `systemctl stop` and for the stop
// half of `systemctl restart` alike; a restart job is still of type
// "restart" while its stop half runs, so asking systemd tells them apart.
func newDaemonExitCmd() *cobra.Command {
	var pid, unit, how string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exit --pid PID",
		Short: "Stop the daemon, or hand its data path over when systemd restarts it (ExecStop)",
		Long: "Sends the daemon SIGUSR2 (exit, leaving the data path forwarding for\n" +
			"the next daemon) when systemd is restarting --unit, else SIGTERM (stop:\n" +
			"remove the data path and everything added to the host), and waits for\n" +
			"it to exit. --how handover|stop decides without asking systemd. An empty\n" +
			"--pid ($MAINPID after the daemon died) does nothing: the data path the\n" +
			"dead daemon left keeps forwarding until the next one takes it over,\n" +
			"or `xlb datapath detach` removes it.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("pid") {
				return usageError{fmt.Errorf("--pid is required (systemd: --pid=${MAINPID})")}
			}
			if pid == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "xlb daemon exit: no daemon process (it died): its data path is left forwarding")
				return nil
			}
			p, err := strconv.Atoi(pid)
			if err != nil || p <= 1 {
				return usageError{fmt.Errorf("--pid %q: want the daemon's process id", pid)}
			}
			sig := syscall.SIGTERM
			switch how {
			case "handover":
				sig = syscall.SIGUSR2
			case "stop":
			case "auto":
				restarting, err := systemdRestarting(cmd.Context(), unit)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "xlb daemon exit: cannot ask systemd whether %s restarts (%v): stopping\n", unit, err)
				}
				if restarting {
					sig = syscall.SIGUSR2
				}
			default:
				return usageError{fmt.Errorf("--how %q: want auto, handover or stop", how)}
			}
			return signalAndWait(p, sig, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pid, "pid", "", "the daemon's process id (systemd: $MAINPID)")
	f.StringVar(&unit, "unit", "xlb.service", "the systemd unit the daemon runs as")
	f.StringVar(&how, "how", "auto", "auto (ask systemd), handover or stop")
	f.DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait for the daemon to exit")
	return cmd
}

// systemdRestarting reports whether systemd has a restart job for unit.
func systemdRestarting(ctx context.Context, unit string) (bool, error) {
	out, err := exec.CommandContext(ctx, "systemctl", "list-jobs", "--no-legend", "--no-pager", unit).Output()
	if err != nil {
		return false, fmt.Errorf("systemctl list-jobs: %w", err)
	}
	return restartJob(out, unit), nil
}

// restartJob finds a restart job of unit in `systemctl list-jobs
// --no-legend` output: lines of JOB UNIT TYPE STATE.
func restartJob(listJobs []byte, unit string) bool {
	sc := bufio.NewScanner(bytes.NewReader(listJobs))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[1] == unit && (f[2] == "restart" || f[2] == "try-restart") {
			return true
		}
	}
	return false
}

// signalAndWait sends sig to pid and waits until the process is gone
// (ExecStop must return only then, or systemd sends its own SIGTERM).
func signalAndWait(pid int, sig syscall.Signal, timeout time.Duration) error {
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("signal daemon %d: %w", pid, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("daemon %d still running %v after %s", pid, timeout, sig)
}
