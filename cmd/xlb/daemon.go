// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/daemon"
)

func newDaemonCmd() *cobra.Command {
	opts := daemon.Options{Socket: api.DefaultSocket, PinPath: daemon.DefaultPinPath}
	var logJSON bool
	cmd := &cobra.Command{
		Use:   "daemon --config FILE",
		Short: "Run the load balancer: attach XDP, own the VIPs, serve the API",
		Long: "Loads the data path (reusing maps pinned by a previous run, so held\n" +
			"connections survive a restart), attaches it to the configured\n" +
			"interfaces, applies the configuration and serves the API. SIGHUP\n" +
			"re-reads the file and applies the difference.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.ConfigPath == "" {
				return usageError{fmt.Errorf("--config is required")}
			}
			if opts.Mode != "" && opts.Mode != "native" && opts.Mode != "generic" {
				return usageError{fmt.Errorf("--xdp-mode %q: want native or generic", opts.Mode)}
			}
			var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
			if logJSON {
				h = slog.NewJSONHandler(os.Stderr, nil)
			}
			opts.Log = slog.New(h)
			opts.Version = buildVersion().Version
			err := daemon.Run(cmd.Context(), opts)
			var ce *daemon.ConfigError
			if errors.As(err, &ce) {
				return usageError{err}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.ConfigPath, "config", "c", "", "configuration file (YAML)")
	f.StringVar(&opts.Socket, "socket", opts.Socket, "API unix socket")
	f.StringVar(&opts.MetricsAddr, "metrics", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9468 (off when empty)")
	f.StringVar(&opts.Mode, "xdp-mode", "", "native or generic; overrides the file's xdp_mode")
	f.StringVar(&opts.PinPath, "pin-path", opts.PinPath, `bpffs directory for the maps ("none" to not pin)`)
	f.StringVar(&opts.APIReadGroup, "api-read-group", "",
		"a group whose members may read the API (GET: xlb list, stats, conn list); the socket gets mode 0660 and that group")
	f.BoolVar(&logJSON, "log-json", false, "log in JSON instead of text")
	return cmd
}

func newApplyCmd(g *globalFlags) *cobra.Command {
	var c clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Apply a configuration file: only what differs changes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{fmt.Errorf("-f FILE is required")}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return usageError{err}
			}
			res, err := c.client().Apply(cmd.Context(), data)
			if err != nil {
				return daemonError(err)
			}
			return printResult(cmd, g, res)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "configuration file (YAML)")
	c.register(cmd)
	return cmd
}
