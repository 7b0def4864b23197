// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/daemon"
)

func newConfigCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with configuration files"}
	cmd.AddCommand(newConfigCheckCmd(g))
	return cmd
}

// newConfigCheckCmd is `xlb config check FILE`: the daemon's checks of a
// configuration, offline (keepalived -t, nginx -t).
func newConfigCheckCmd(g *globalFlags) *cobra.Command {
	pinPath := daemon.DefaultPinPath
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Check a configuration file as the daemon would, without a daemon (exit 0 valid, 78 refused)",
		Long: `Checks FILE as a daemon starting on this host would before it loads
anything: keys and values, the compiled data path's capacities, that the
interfaces exist, VIPs and local IPs against the host's own addresses
(those a daemon recorded under --pin-path as its own excepted), the kernel
features services ask for, and the connection tables against the memory
available. It changes nothing and needs no daemon; it says what it could
not check. Exit codes: 0 valid, 78 refused (every problem printed with its
field), 1 FILE unreadable, 2 a wrong command line.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("which file? xlb config check FILE")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			cfg, err := config.Parse(data)
			var rep daemon.CheckReport
			if err == nil {
				rep, err = daemon.CheckOffline(cfg, pinPath)
			}
			var ve *config.ValidationError
			refused := err != nil && (errors.As(err, &ve) || cfg == nil)
			if err != nil && !refused {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				res := struct {
					Valid    bool     `json:"valid"`
					Problems []string `json:"problems,omitempty"`
					daemon.CheckReport
				}{Valid: err == nil, CheckReport: rep}
				if ve != nil {
					res.Problems = ve.Problems
				} else if err != nil {
					res.Problems = []string{err.Error()}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(res); jerr != nil {
					return jerr
				}
			} else if err == nil {
				fmt.Fprintf(out, "%s: valid (%d services, %d reals)\n", args[0], rep.Services, rep.Reals)
				fmt.Fprintln(out, "checked:")
				for _, c := range rep.Checked {
					fmt.Fprintf(out, "  %s\n", c)
				}
				fmt.Fprintln(out, "not checked (needs the running daemon):")
				for _, c := range rep.NotChecked {
					fmt.Fprintf(out, "  %s\n", c)
				}
			}
			if err != nil {
				if g.json {
					return codedError{exitConfig, fmt.Errorf("%s: refused", args[0])}
				}
				return codedError{exitConfig, fmt.Errorf("%s: refused: %w", args[0], err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pinPath, "pin-path", pinPath, `bpffs directory of a daemon whose record of added addresses to read ("none": no daemon)`)
	return cmd
}
