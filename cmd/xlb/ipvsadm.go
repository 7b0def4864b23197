// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/ipvsadm"
)

// ipvsadmEnv is where an ipvsadm command line runs: the daemon's socket
// and the standard streams.
type ipvsadmEnv struct {
	prog           string // the name in messages and -h
	socket         string
	stdin          io.Reader
	stdout, stderr io.Writer
	// rateInterval is how far apart --rate's two readings are.
	rateInterval time.Duration
}

// ipvsadmSocket is the daemon's socket: $XLB_SOCKET, else the default.
func ipvsadmSocket() string {
	if s := os.Getenv("XLB_SOCKET"); s != "" {
		return s
	}
	return api.DefaultSocket
}

func newIpvsadmCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ipvsadm [ipvsadm arguments]",
		Short: "Run an ipvsadm(8) command line against the daemon",
		Long: `Run an ipvsadm 1.31 command line (with DPVS's FullNAT and local-address
options) against the daemon, printing what ipvsadm prints. The daemon is
found at $XLB_SOCKET, else ` + api.DefaultSocket + `. Every argument is
ipvsadm's: see xlb ipvsadm -h. Exit status: 2 for a command line refused
before anything is sent, 1 when the daemon refuses or cannot be reached.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			env := ipvsadmEnv{prog: "ipvsadm", socket: ipvsadmSocket(), stdin: cmd.InOrStdin(),
				stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), rateInterval: time.Second}
			if code := runIpvsadm(cmd.Context(), env, args); code != 0 {
				return exitStatus(code) // runIpvsadm printed why
			}
			return nil
		},
	}
}

// ipvsadmMain runs one ipvsadm command line (without the program name)
// against the daemon, as the xlb binary does when invoked as ipvsadm,
// and returns the exit status.
func ipvsadmMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := ipvsadmEnv{prog: "ipvsadm", socket: ipvsadmSocket(), stdin: os.Stdin,
		stdout: stdout, stderr: stderr, rateInterval: time.Second}
	return runIpvsadm(ctx, env, args)
}

// runIpvsadm parses and runs one command line; it prints errors as
// "ipvsadm: why" and returns 2 for usage errors, 1 for the others.
func runIpvsadm(ctx context.Context, env ipvsadmEnv, args []string) int {
	c, err := ipvsadm.Parse(args)
	if err == nil {
		err = runIpvsadmCommand(ctx, env, c)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(env.stderr, "%s: %v\n", env.prog, err)
	if ipvsadm.IsUsage(err) {
		return 2
	}
	return 1
}

// runIpvsadmCommand runs a parsed command. Every command that changes
// something makes one write to the daemon, after everything it can check
// is checked, so that nothing is half applied.
func runIpvsadmCommand(ctx context.Context, env ipvsadmEnv, c *ipvsadm.Command) error {
	switch c.Kind {
	case ipvsadm.Help:
		_, err := io.WriteString(env.stdout, ipvsadm.Usage(env.prog))
		return err
	case ipvsadm.Version:
		_, err := fmt.Fprintf(env.stdout, "ipvsadm v1.31 command lines, xlb %s\n", buildVersion().Version)
		return err
	}
	cl := api.NewClient(env.socket)
	switch c.Kind {
	case ipvsadm.List:
		return ipvsadmList(ctx, env, cl, c)
	case ipvsadm.Save:
		svcs, err := cl.Services(ctx)
		if err != nil {
			return err
		}
		return ipvsadm.WriteRules(env.stdout, svcs, c.List)
	case ipvsadm.GetLaddr:
		svcs, err := ipvsadmServices(ctx, cl, c)
		if err != nil {
			return err
		}
		return ipvsadm.WriteLaddrs(env.stdout, svcs)
	case ipvsadm.Zero:
		var proto, vip string // "": every service
		var port int
		if !c.Service.IsZero() {
			proto, vip, port = c.Service.Proto, c.Service.Addr.Addr().String(), int(c.Service.Addr.Port())
		}
		return cl.ZeroCounters(ctx, proto, vip, port)
	case ipvsadm.Clear, ipvsadm.SetTimeouts:
		return ipvsadmApply(ctx, cl, c.ApplyTo)
	case ipvsadm.Restore:
		lines, err := ipvsadm.ParseRestore(env.stdin)
		if err != nil {
			return err
		}
		return ipvsadmApply(ctx, cl, func(cfg *config.Config) error { return ipvsadm.RestoreTo(cfg, lines) })
	}
	req, err := c.Request()
	if err != nil {
		return err
	}
	_, err = cl.Change(ctx, req.Method, req.Path, req.Body)
	return err
}

// ipvsadmApply edits the configuration in force and applies the result in
// one apply: the whole edit or nothing. The apply is made against the
// revision read (If-Match): when someone else changed the configuration
// in between, the edit is redone on the new one, so no change is lost.
func ipvsadmApply(ctx context.Context, cl *api.Client, edit func(*config.Config) error) error {
	_, err := cl.Edit(ctx, edit)
	return err
}

// ipvsadmServices lists the services, or the command's one.
func ipvsadmServices(ctx context.Context, cl *api.Client, c *ipvsadm.Command) ([]api.Service, error) {
	svcs, err := cl.Services(ctx)
	if err != nil || c.Service.IsZero() {
		return svcs, err
	}
	s, ok := ipvsadm.FindService(svcs, c.Service)
	if !ok {
		return nil, fmt.Errorf("no such service: %s", c.Service)
	}
	return []api.Service{s}, nil
}

// ipvsadmList runs -L: services, connections (-c), timeouts (--timeout)
// or sync daemons (--daemon: xlb has none, so nothing).
func ipvsadmList(ctx context.Context, env ipvsadmEnv, cl *api.Client, c *ipvsadm.Command) error {
	l := c.List
	switch {
	case l.Connection:
		cfg, err := cl.Config(ctx)
		if err != nil {
			return err
		}
		conns, err := cl.Conns(ctx, "")
		if err != nil {
			return err
		}
		return ipvsadm.WriteConns(env.stdout, ipvsadm.ConnRows(conns, cfg.TimeoutSettings()), l)
	case l.Timeout:
		cfg, err := cl.Config(ctx)
		if err != nil {
			return err
		}
		return ipvsadm.WriteTimeouts(env.stdout, ipvsadm.CurrentTimeouts(cfg))
	case l.Daemon:
		return nil
	}
	header := ""
	if c.Service.IsZero() { // ipvsadm prints its version line only over the whole table
		v, err := cl.Version(ctx)
		if err != nil {
			return err
		}
		header = ipvsadm.Header(v.Version)
	}
	svcs, err := ipvsadmServices(ctx, cl, c)
	if err != nil {
		return err
	}
	if l.Rate && !l.Stats { // --stats wins over --rate, as in ipvsadm
		select {
		case <-time.After(env.rateInterval):
		case <-ctx.Done():
			return ctx.Err()
		}
		next, err := ipvsadmServices(ctx, cl, c)
		if err != nil {
			return err
		}
		svcs = ipvsadm.Rates(svcs, next, env.rateInterval)
	}
	return ipvsadm.WriteList(env.stdout, header, svcs, l)
}
