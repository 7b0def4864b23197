// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/api"
)

// clientFlags are the flags of every command that talks to the daemon.
type clientFlags struct {
	socket string
}

func (c *clientFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&c.socket, "socket", api.DefaultSocket, "the daemon's API socket")
}

func (c *clientFlags) client() *api.Client { return api.NewClient(c.socket) }

// daemonError turns the daemon's refusal of a request into a usage error
// (exit code 2): the request named something wrong.
func daemonError(err error) error {
	if api.IsClientError(err) {
		return usageError{err}
	}
	return err
}

// serviceFlag is ipvsadm's -t/-u: a protocol and VIP:port.
type serviceFlag struct {
	tcp, udp string
}

func (s *serviceFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.tcp, "tcp-service", "t", "", "TCP service VIP:PORT (as ipvsadm -t; [IPv6]:PORT)")
	cmd.Flags().StringVarP(&s.udp, "udp-service", "u", "", "UDP service VIP:PORT (as ipvsadm -u)")
}

// parse returns the protocol and address of the service named.
func (s *serviceFlag) parse() (string, netip.AddrPort, error) {
	proto, v := "tcp", s.tcp
	switch {
	case s.tcp != "" && s.udp != "":
		return "", netip.AddrPort{}, usageError{fmt.Errorf("give -t or -u, not both")}
	case s.udp != "":
		proto, v = "udp", s.udp
	case s.tcp == "":
		return "", netip.AddrPort{}, usageError{fmt.Errorf("which service? give -t VIP:PORT or -u VIP:PORT")}
	}
	ap, err := parseAddrPort("service", v)
	if err != nil {
		return "", netip.AddrPort{}, usageError{err}
	}
	return proto, ap, nil
}

// path returns the service's API path.
func (s *serviceFlag) path() (string, error) {
	proto, ap, err := s.parse()
	if err != nil {
		return "", err
	}
	return api.ServicePath(proto, ap.Addr().String(), int(ap.Port())), nil
}

// printResult prints what a change did.
func printResult(cmd *cobra.Command, g *globalFlags, res api.ApplyResult) error {
	if g.json {
		return printJSON(cmd, res)
	}
	if !res.Changed {
		fmt.Fprintln(cmd.OutOrStdout(), "nothing to change")
	}
	for _, c := range res.Changes {
		fmt.Fprintln(cmd.OutOrStdout(), c)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	return nil
}
