// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `xlb version` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	// Modified: the tree had changes not committed when it was built.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: "devel"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

// String is the version as `xlb version` and `xlb --version` print it:
// the module version, the revision when known, the Go version.
func (v versionInfo) String() string {
	s := v.Version
	switch {
	case v.Revision != "" && v.Modified:
		s += " (" + v.Revision + ", with changes not committed)"
	case v.Revision != "":
		s += " (" + v.Revision + ")"
	}
	return s + " " + v.GoVersion
}

func newVersionCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of xlb",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if g.json {
				return printJSON(cmd, v)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "xlb %s\n", v)
			return nil
		},
	}
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

func printJSON(cmd *cobra.Command, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return err
}
