// SPDX-License-Identifier: Apache-2.0

// Command xlb is the single binary of the xlb load balancer: the daemon,
// the CLI that talks to it over its API socket, and the namespace lab.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// usageError marks errors in the command line itself (exit code 2).
type usageError struct{ error }

// exitStatus passes on the exit code of a command xlb ran (lab exec).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// Exit codes of `xlb daemon` that mean "starting again will not help":
// the unit file lists them in RestartPreventExitStatus, so systemd does not
// restart-loop on them.
const (
	exitConfig = 78 // EX_CONFIG: the configuration was refused
	exitLayout = 79 // pinned maps of another layout (see --drop-incompatible-maps)
)

// codedError is an error with its own exit code.
type codedError struct {
	code int
	error
}

func (e codedError) Unwrap() error { return e.error }

func main() {
	// invoked through a symlink named ipvsadm: an ipvsadm command line
	if filepath.Base(os.Args[0]) == "ipvsadm" {
		os.Exit(ipvsadmMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var status exitStatus
		if errors.As(err, &status) {
			os.Exit(int(status)) // the command it ran said why
		}
		fmt.Fprintln(os.Stderr, "xlb:", err)
		var ce codedError
		if errors.As(err, &ce) {
			os.Exit(ce.code)
		}
		var ue usageError
		if errors.As(err, &ue) || isUnknownCommand(err) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// isUnknownCommand tells cobra's error for a command it does not know, a
// wrong command line like any other (exit 2, docs/cli.md).
func isUnknownCommand(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// globalFlags are the flags every command has.
type globalFlags struct {
	json bool
}

func newRootCmd() *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "xlb",
		Short:         "xlb: an XDP/eBPF L4 load balancer (FullNAT)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion().String(),
	}
	root.SetVersionTemplate("xlb {{.Version}}\n")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON instead of text")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{plainFlagError(err)} })
	root.AddCommand(newVersionCmd(&g), newDatapathCmd(&g), newLabCmd(),
		newDaemonCmd(), newApplyCmd(&g), newServiceCmd(&g), newRealCmd(&g), newLaddrCmd(&g),
		newListCmd(&g), newStatusCmd(&g), newDoctorCmd(&g), newTopCmd(), newDropsCmd(&g), newConnCmd(&g), newStatsCmd(&g), newBenchCmd(&g), newIpvsadmCmd(&g), newImportCmd(&g), newConfigCmd(&g), newNodeCmd(&g))
	root.AddCommand(newManCmd(root))
	return root
}
