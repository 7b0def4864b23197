// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newManCmd is `xlb man`, hidden: xlb(8) in roff, generated from the
// command tree (make man writes docs/xlb.8; a test keeps it current).
func newManCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "man",
		Short:  "Print the xlb(8) manual page (roff)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeMan(cmd.OutOrStdout(), root)
		},
	}
}

// roff escapes s for a roff text line.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// writeMan writes xlb(8): every command with its description and flags,
// then the exit codes and where to read more.
func writeMan(w io.Writer, root *cobra.Command) error {
	root.InitDefaultCompletionCmd()
	fmt.Fprintf(w, ".TH XLB 8 \"\" \"xlb\" \"System Administration\"\n")
	fmt.Fprintf(w, ".SH NAME\nxlb \\- %s\n", roff(root.Short[len("xlb: "):]))
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B xlb\n.I command\n[\\fIflags\\fR]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s\n", roff("One binary: xlb daemon runs the XDP data path; every other command is a client of the daemon's API socket "+
		"(--socket, default /run/xlb/xlb.sock), or works without a daemon (config check, doctor, lab, bench)."))
	fmt.Fprintf(w, ".SH COMMANDS\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c != root && c.Runnable() {
			fmt.Fprintf(w, ".SS %s\n", roff(c.CommandPath()))
			fmt.Fprintf(w, ".B %s\n", roff(c.UseLine()))
			fmt.Fprintf(w, ".PP\n%s\n", roffBlock(cmp.Or(c.Long, c.Short)))
			var flags []*pflag.Flag
			c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Name != "help" {
					flags = append(flags, f)
				}
			})
			slices.SortFunc(flags, func(a, b *pflag.Flag) int { return strings.Compare(a.Name, b.Name) })
			for _, f := range flags {
				name := "\\-\\-" + roff(f.Name)
				if f.Shorthand != "" {
					name = "\\-" + f.Shorthand + ", " + name
				}
				fmt.Fprintf(w, ".TP\n\\fB%s\\fR", name)
				if t := f.Value.Type(); t != "bool" {
					fmt.Fprintf(w, " \\fI%s\\fR", roff(t))
				}
				usage := f.Usage
				if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" {
					usage += " (default " + f.DefValue + ")"
				}
				fmt.Fprintf(w, "\n%s\n", roff(usage))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	fmt.Fprintf(w, ".SH GLOBAL FLAGS\n")
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		fmt.Fprintf(w, ".TP\n\\fB\\-\\-%s\\fR\n%s\n", roff(f.Name), roff(f.Usage))
	})
	fmt.Fprintf(w, ".SH EXIT STATUS\n%s\n", roff("0 done; 2 the command line or the request was wrong (nothing changed); "+
		"1 anything else (no daemon, a kernel error); xlb daemon exits 78 for a refused configuration and 79 for pinned maps "+
		"of another layout or size; xlb config check exits 78 for a refused file; xlb doctor exits 1 when it found a problem."))
	fmt.Fprintf(w, ".SH FILES\n.TP\n/etc/xlb/xlb.yaml\nthe configuration\n.TP\n/run/xlb/xlb.sock\nthe API socket\n.TP\n/sys/fs/bpf/xlb\nthe pinned data path\n")
	fmt.Fprintf(w, ".SH SEE ALSO\n%s\n", roff("ipvsadm(8), keepalived(8). The operator guide, the configuration and CLI references and "+
		"the troubleshooting page: /usr/local/share/doc/xlb and https://github.com/xlb-dev/xlb/tree/main/docs."))
	return nil
}

// roffBlock is roff for a command's description: text is filled,
// indented lines (lists, examples) are kept as they are.
func roffBlock(s string) string {
	var b strings.Builder
	kept := false
	for _, line := range strings.Split(s, "\n") {
		indented := strings.HasPrefix(line, " ")
		switch {
		case indented && !kept:
			b.WriteString(".nf\n")
		case !indented && kept:
			b.WriteString(".fi\n")
		}
		kept = indented
		if line == "" && !kept {
			b.WriteString(".PP\n")
			continue
		}
		b.WriteString(roff(line) + "\n")
	}
	if kept {
		b.WriteString(".fi\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
