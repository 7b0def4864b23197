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
	cmd.AddCommand(newConfigCheckCmd(g), newConfigExportCmd())
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

// newConfigExportCmd is `xlb config export`: the configuration in force,
// changes made through the API and the CLI included, as a YAML file the
// daemon reads back as the same configuration.
func newConfigExportCmd() *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print the configuration in force as YAML (with the changes made through the API and the CLI)",
		Long: `Prints the configuration the daemon runs, as YAML: the file it read plus
every change made through the API or the CLI since. A reload (SIGHUP,
systemctl reload) applies the file and drops such changes; writing the
export over the file first keeps them:

  xlb config export > /etc/xlb/xlb.yaml.new && mv /etc/xlb/xlb.yaml.new /etc/xlb/xlb.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rev, err := c.client().ConfigRevision(cmd.Context())
			if err != nil {
				return daemonError(err)
			}
			b, err := config.Marshal(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# xlb config export: the configuration in force, revision %d\n%s", rev, b)
			return nil
		},
	}
	c.register(cmd)
	return cmd
}
