// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docFiles are where the commands and their flags are documented: the CLI
// reference, and the bench's methodology for the bench's many options.
var docFiles = map[string][]string{
	"":          {"cli.md"},
	"xlb bench": {"cli.md", "bench.md"},
}

func readDocs(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", n))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// commands walks the command tree: every command that is not hidden,
// by its path ("xlb real add").
func commands(root *cobra.Command) map[string]*cobra.Command {
	root.InitDefaultCompletionCmd() // cobra adds it when it runs
	out := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		out[c.CommandPath()] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// TestDocsHaveEveryCommandAndFlag: every command of the binary appears in
// docs/cli.md as "xlb <path>", and every flag of it as --name (a bench
// flag may be in docs/bench.md instead).
func TestDocsHaveEveryCommandAndFlag(t *testing.T) {
	cli := readDocs(t, docFiles[""]...)
	for path, c := range commands(newRootCmd()) {
		if path == "xlb" {
			continue
		}
		if !strings.Contains(cli, path) {
			t.Errorf("%q is not in docs/cli.md", path)
			continue
		}
		docs := cli
		for prefix, files := range docFiles {
			if prefix != "" && strings.HasPrefix(path, prefix) {
				docs = readDocs(t, files...)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			short := f.Shorthand != "" && regexp.MustCompile(`(^|[\s\[|(\x60])-`+f.Shorthand+`([\s\]|)\x60=]|$)`).MatchString(docs)
			if !strings.Contains(docs, "--"+f.Name) && !short {
				t.Errorf("%s --%s is not documented", path, f.Name)
			}
		})
	}
}

// A command line in the docs: "xlb" and the words of its path, then the
// rest (arguments and flags) up to the end of the code span or line.
var docCommand = regexp.MustCompile("(?m)(?:^|`)(xlb(?: [a-z][a-z-]*)+)([^`\\n]*)")
var docFlag = regexp.MustCompile(`(?:^|[\s\[|(])(--[a-z][a-z0-9-]*)`)

// TestDocsNameOnlyWhatExists: every "xlb ..." command line in
// docs/cli.md names a command of the binary, and every --flag on it is
// one of that command's flags.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	cmds := commands(newRootCmd())
	cli := readDocs(t, "cli.md")
	lines := docCommand.FindAllStringSubmatch(cli, -1)
	if len(lines) < 40 {
		t.Fatalf("found %d command lines in docs/cli.md", len(lines))
	}
	for _, m := range lines {
		words := strings.Fields(m[1])
		// the longest prefix of the words that is a command; the rest are
		// arguments (xlb lab exec client -- ...)
		var c *cobra.Command
		n := len(words)
		for ; n > 1; n-- {
			if c = cmds[strings.Join(words[:n], " ")]; c != nil {
				break
			}
		}
		if c == nil || n == 1 {
			t.Errorf("docs/cli.md names %q, which is not a command", m[1])
			continue
		}
		if n < len(words) && len(c.Commands()) > 0 && !slices.Contains([]string{"exec"}, c.Name()) {
			t.Errorf("docs/cli.md names %q: %q has no subcommand %q", m[1], c.CommandPath(), words[n])
		}
		for _, f := range docFlag.FindAllStringSubmatch(m[2], -1) {
			name := strings.TrimPrefix(f[1], "--")
			if name != "help" && c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
				t.Errorf("docs/cli.md: %q has no flag --%s (in %q)", c.CommandPath(), name, strings.TrimSpace(m[0]))
			}
		}
	}
}
