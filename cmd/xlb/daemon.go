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
	"github.com/xlb-dev/xlb/internal/datapath"
)

func newDaemonCmd() *cobra.Command {
	opts := daemon.Options{Socket: api.DefaultSocket, PinPath: daemon.DefaultPinPath}
	var logJSON bool
	cmd := &cobra.Command{
		Use:   "daemon --config FILE",
		Short: "Run the load balancer: attach XDP, own the VIPs, serve the API",
		Long: "Loads the data path (taking over the maps and links a previous run\n" +
			"pinned, so held connections survive and no packet is lost), attaches\n" +
			"it to the configured interfaces, applies the configuration and serves\n" +
			"the API. SIGHUP re-reads the file and applies the difference.\n\n" +
			"SIGTERM or SIGINT stop: the data path and everything the daemon added\n" +
			"to the host are removed. SIGUSR2 hands over: the daemon exits and the\n" +
			"data path keeps forwarding until the next daemon takes it over (as it\n" +
			"does after a crash). Exit status 78: the configuration was refused\n" +
			"(connection tables larger than the available memory included); 79:\n" +
			"pinned maps of another layout or connection tables of another size\n" +
			"(see --drop-incompatible-maps).",
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
			var (
				ce *daemon.ConfigError
				me *datapath.MemoryError
				le *datapath.LayoutError
				re *datapath.ResizeError
				ke *datapath.CapacityError
				mt *datapath.MTUError
			)
			switch {
			case errors.As(err, &ce), errors.As(err, &me), errors.As(err, &mt):
				return codedError{exitConfig, err}
			case errors.As(err, &le), errors.As(err, &re), errors.As(err, &ke):
				return codedError{exitLayout, err}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.ConfigPath, "config", "c", "", "configuration file (YAML)")
	f.StringVar(&opts.Socket, "socket", opts.Socket, "API unix socket")
	f.StringVar(&opts.MetricsAddr, "metrics", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9468 (off when empty)")
	f.StringVar(&opts.WebAddr, "web", "", "serve the live page, read-only and without login, on this address, e.g. 127.0.0.1:9469 (off when empty)")
	f.StringVar(&opts.Mode, "xdp-mode", "", "native or generic; overrides the file's xdp_mode")
	f.StringVar(&opts.PinPath, "pin-path", opts.PinPath, `bpffs directory for the maps ("none" to not pin)`)
	f.StringVar(&opts.APIReadGroup, "api-read-group", "",
		"a group whose members may read the API (GET: xlb list, stats, conn list); the socket gets mode 0660 and that group")
	f.BoolVar(&logJSON, "log-json", false, "log in JSON instead of text")
	f.BoolVar(&opts.DropIncompatible, "drop-incompatible-maps", false,
		"replace pinned maps whose layout differs from this xlb's (after an upgrade that changed them; their connections are lost)")
	cmd.AddCommand(newDaemonExitCmd())
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
