// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/keepalived"
)

// importFlags are the flags of xlb import keepalived.
type importFlags struct {
	interfaces []string
	laddrs     []string
	out        string
	strict     bool
}

// importResult is what xlb import prints with --json.
type importResult struct {
	Config   *config.Config        `json:"config"`
	Unmapped []keepalived.Unmapped `json:"unmapped"`
	Warnings []string              `json:"warnings"`
}

// newImportCmd is xlb import: it converts another load balancer's
// configuration; keepalived is the one format so far.
func newImportCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FORMAT FILE",
		Short: "Convert another load balancer's configuration to xlb's YAML",
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("which format? xlb import keepalived FILE")}
			}
			return usageError{fmt.Errorf("unknown format %q: xlb imports keepalived", args[0])}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.AddCommand(newImportKeepalivedCmd(g))
	return cmd
}

// newImportKeepalivedCmd is xlb import keepalived FILE.
func newImportKeepalivedCmd(g *globalFlags) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "keepalived FILE [--interface IF ...] [--laddr IP ...] [-o OUT.yaml] [--strict]",
		Short: "Convert keepalived.conf virtual servers (IPVS or DPVS keepalived) to xlb's YAML",
		Long: "Reads keepalived.conf, with the files it includes, and writes xlb's YAML\n" +
			"configuration to stdout (or -o): a FullNAT service per virtual_server,\n" +
			"its reals, and the first real's check as the service's health check.\n" +
			"Whatever has no equivalent in xlb is listed on stderr as\n" +
			"FILE:LINE: TEXT: WHY; nothing is dropped silently. The result is\n" +
			"validated and its problems printed as warnings.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("want one keepalived configuration file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return importKeepalived(cmd, g, &f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.interfaces, "interface", "i", nil, "an interface XDP attaches to (repeat or comma-separate)")
	fl.StringSliceVarP(&f.laddrs, "laddr", "z", nil,
		"a FullNAT local IP; each service takes those of its VIP's family (repeat or comma-separate)")
	fl.StringVarP(&f.out, "output", "o", "", "write the YAML to this file instead of stdout")
	fl.BoolVar(&f.strict, "strict", false, "exit 1 when anything was not imported or the result does not validate")
	return cmd
}

// importKeepalived converts the file and prints the result.
func importKeepalived(cmd *cobra.Command, g *globalFlags, f *importFlags, path string) error {
	for _, l := range f.laddrs {
		if _, _, err := config.ParseLocalIPs(l); err != nil {
			return usageError{fmt.Errorf("--laddr: %w", err)}
		}
	}
	cfg, unmapped, err := keepalived.ImportFile(path, keepalived.Options{Interfaces: f.interfaces, LocalIPs: f.laddrs})
	if err != nil {
		return usageError{err}
	}
	warnings := importWarnings(cfg, f)
	summary := importSummary(cfg, unmapped)
	data, err := keepalived.Marshal(cfg)
	if err != nil {
		return err
	}
	data = append([]byte(fmt.Sprintf("# Converted from %s by xlb import keepalived: %s.\n", path, summary)), data...)
	if f.out != "" {
		if err := os.WriteFile(f.out, data, 0o644); err != nil {
			return fmt.Errorf("write the configuration: %w", err)
		}
		summary += "; written to " + f.out
	}
	if g.json {
		if unmapped == nil {
			unmapped = []keepalived.Unmapped{}
		}
		if err := printJSON(cmd, importResult{Config: cfg, Unmapped: unmapped, Warnings: warnings}); err != nil {
			return err
		}
	} else {
		if f.out == "" {
			if _, err := cmd.OutOrStdout().Write(data); err != nil {
				return fmt.Errorf("write the configuration: %w", err)
			}
		}
		printImportReport(cmd.ErrOrStderr(), unmapped, warnings, summary)
	}
	if f.strict && len(unmapped)+len(warnings) > 0 {
		return fmt.Errorf("--strict: %s; %s", plural(len(unmapped), "line", "lines")+" not imported",
			plural(len(warnings), "warning", "warnings"))
	}
	return nil
}

// importWarnings lists what the imported configuration still lacks: the
// interfaces, and every problem Validate finds.
func importWarnings(cfg *config.Config, f *importFlags) []string {
	warnings := []string{}
	if len(f.interfaces) == 0 {
		warnings = append(warnings, "no --interface given: the file says interfaces: []; the daemon needs the interfaces XDP attaches to")
	}
	if err := cfg.Validate(); err != nil {
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			return append(warnings, err.Error())
		}
		for _, p := range ve.Problems {
			warnings = append(warnings, "the configuration does not validate: "+p)
		}
	}
	return warnings
}

// importSummary says what was imported: "imported 3 services with 9
// reals; 4 lines not imported".
func importSummary(cfg *config.Config, unmapped []keepalived.Unmapped) string {
	reals := 0
	for _, s := range cfg.Services {
		reals += len(s.Reals)
	}
	return fmt.Sprintf("imported %s with %s; %s not imported", plural(len(cfg.Services), "service", "services"),
		plural(reals, "real", "reals"), plural(len(unmapped), "line", "lines"))
}

// printImportReport writes the unmapped list, the warnings and the
// summary, one line each.
func printImportReport(w io.Writer, unmapped []keepalived.Unmapped, warnings []string, summary string) {
	for _, u := range unmapped {
		fmt.Fprintln(w, u.String())
	}
	for _, s := range warnings {
		fmt.Fprintln(w, "warning:", s)
	}
	fmt.Fprintln(w, summary)
}

// plural writes "1 line" or "3 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
