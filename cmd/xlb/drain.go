// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
)

// errDrainTimeout is drain's error when connections remain at the timeout.
var errDrainTimeout = errors.New("drain timed out")

// newDrainCmd is `xlb real drain`: weight 0, then the remaining
// connections reported until none are left or the timeout.
func newDrainCmd(g *globalFlags, c *clientFlags) *cobra.Command {
	var (
		svc      serviceFlag
		real     string
		timeout  time.Duration
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "drain -t|-u VIP:PORT -r REAL:PORT [--timeout 5m]",
		Short: "Set a real's weight to 0 and wait until its connections are gone",
		Long: `Sets the real's weight to 0 (no new connections; persistent clients move
too), then prints its remaining connections every --interval until none
are left (exit 0) or --timeout passes (exit 1, the real stays drained).
Connections end as their clients close them or as they time out.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			proto, sap, err := svc.parse()
			if err != nil {
				return err
			}
			rp, err := parseReal(real)
			if err != nil {
				return err
			}
			if timeout <= 0 || interval <= 0 {
				return usageError{fmt.Errorf("--timeout %v and --interval %v: want both above 0", timeout, interval)}
			}
			cl := c.client()
			path := api.ServicePath(proto, sap.Addr().String(), int(sap.Port()))
			realPath := fmt.Sprintf("%s/reals/%s/%d", path, rp.Addr(), rp.Port())
			if _, err := cl.Change(cmd.Context(), http.MethodPut, realPath, api.Weight(0)); err != nil {
				return daemonError(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return drainWait(ctx, cmd, g, cl, proto, sap, rp, interval)
		},
	}
	svc.register(cmd)
	cmd.Flags().StringVarP(&real, "real-server", "r", "", "real server ADDRESS:PORT")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to report the remaining connections")
	return cmd
}

// drainProgress is one line of drain's report (--json).
type drainProgress struct {
	Real      string  `json:"real"`
	Active    int     `json:"active_conns"`
	Inactive  int     `json:"inactive_conns"`
	ElapsedS  float64 `json:"elapsed_s"`
	Drained   bool    `json:"drained"`
	TimedOut  bool    `json:"timed_out,omitempty"`
	Remaining int     `json:"remaining"`
}

func drainWait(ctx context.Context, cmd *cobra.Command, g *globalFlags, cl *api.Client, proto string, svc, rp netip.AddrPort, interval time.Duration) error {
	start := time.Now()
	out := cmd.OutOrStdout()
	for {
		active, inactive, err := realConns(cmd.Context(), cl, proto, svc, rp)
		if err != nil {
			return err
		}
		p := drainProgress{Real: rp.String(), Active: active, Inactive: inactive, ElapsedS: time.Since(start).Seconds(),
			Remaining: active + inactive, Drained: active+inactive == 0}
		timedOut := ctx.Err() != nil && !p.Drained
		p.TimedOut = timedOut
		if g.json {
			if err := printJSON(cmd, p); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(out, "%s: %d active, %d inactive connections (%s)\n", rp, active, inactive, time.Since(start).Round(time.Second))
		}
		switch {
		case p.Drained:
			if !g.json {
				fmt.Fprintf(out, "%s drained\n", rp)
			}
			return nil
		case timedOut:
			return fmt.Errorf("%w: %s still has %d connections (it stays at weight 0)", errDrainTimeout, rp, p.Remaining)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			if cmd.Context().Err() != nil {
				return cmd.Context().Err()
			}
		}
	}
}

// realConns returns a real's active and inactive connections.
func realConns(ctx context.Context, cl *api.Client, proto string, svc, rp netip.AddrPort) (int, int, error) {
	svcs, err := cl.Services(ctx)
	if err != nil {
		return 0, 0, daemonError(err)
	}
	for _, s := range svcs {
		if s.Protocol.String() != proto || s.VIP != svc.Addr() || s.Port != svc.Port() {
			continue
		}
		for _, r := range s.Reals {
			if r.Address == rp.Addr() && r.Port == rp.Port() {
				return r.ActiveConns, r.InactiveConns, nil
			}
		}
		return 0, 0, fmt.Errorf("service %s %s has no real %s", proto, svc, rp)
	}
	return 0, 0, fmt.Errorf("no service %s %s", proto, svc)
}
