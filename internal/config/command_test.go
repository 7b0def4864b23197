// SPDX-License-Identifier: Apache-2.0

package config

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// splitCases are commands SplitCommand accepts, with their words.
var splitCases = []struct {
	name string
	have string
	want []string
}{
	{"words", "/usr/bin/check  a\tb ", []string{"/usr/bin/check", "a", "b"}},
	{"single quotes", `check 'a b' 'it'\''s' ''`, []string{"check", "a b", "it's", ""}},
	{"double quotes", `check "a b" "say \"hi\"" "\$X \\ \n" ""`, []string{"check", "a b", `say "hi"`, `$X \ \n`, ""}},
	{"quotes join a word", `check a'b c'"d"e`, []string{"check", "ab cde"}},
	{"backslash", `check a\ b \; \$X \'`, []string{"check", "a b", ";", "$X", "'"}},
	{"quoted specials", `check '|&;<>()$*?[{' "#~|&;<>()*?[{" '` + "`" + `'`, []string{"check", "|&;<>()$*?[{", "#~|&;<>()*?[{", "`"}},
	{"# and ~ inside a word", "check a#b a~b", []string{"check", "a#b", "a~b"}},
	{"= in arguments", "curl --data=a=b x=y", []string{"curl", "--data=a=b", "x=y"}},
	{"= after a quote in the program", `'A'=b`, []string{"A=b"}},
	{"= in a program path", "/opt/a=b/check", []string{"/opt/a=b/check"}},
	{"newline in quotes", "check 'a\nb'", []string{"check", "a\nb"}},
	{"other bytes", "check é \r \x01", []string{"check", "é", "\r", "\x01"}},
	{"closing brackets", "check ] } !", []string{"check", "]", "}", "!"}},
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range splitCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitCommand(tc.have)
			if err != nil {
				t.Fatalf("SplitCommand(%q): %v", tc.have, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("SplitCommand(%q) = %q, want %q", tc.have, got, tc.want)
			}
		})
	}
}

func TestSplitCommandRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want string
	}{
		{"empty", "", "no command"},
		{"blank", " \t ", "no command"},
		{"empty program", "'' x", "at byte 0: the program name is empty"},
		{"unclosed single quote", "check 'a b", "at byte 6: a ' that is not closed"},
		{"unclosed double quote", `check "a \"`, `at byte 6: a " that is not closed`},
		{"trailing backslash", `check a\`, "at byte 7: a backslash at the end"},
		{"backslash newline", "check a\\\nb", "a backslash at the end of the command or of a line"},
		{"backslash newline in double quotes", "check \"a\\\nb\"", "a backslash at the end of a line"},
		{"semicolon", "check; reboot", `at byte 5: unquoted ';', which a shell would interpret`},
		{"pipe", "check | tee", `unquoted '|'`},
		{"and", "check && x", `unquoted '&'`},
		{"background", "check &", `unquoted '&'`},
		{"redirect out", "check >/dev/null", `unquoted '>'`},
		{"redirect in", "check </dev/null", `unquoted '<'`},
		{"subshell", "(check)", `at byte 0: unquoted '('`},
		{"variable", "check $XLB_REAL_ADDR", `unquoted '$'`},
		{"braced variable", "check ${XLB_REAL_ADDR}", `unquoted '$'`},
		{"command substitution", "check `id`", "unquoted '`'"},
		{"variable in double quotes", `check "$XLB_REAL_ADDR"`, `at byte 7: '$' inside "...", which a shell would expand`},
		{"backquote in double quotes", "check \"`id`\"", "'`' inside \"...\""},
		{"glob star", "check /tmp/*", `unquoted '*'`},
		{"glob question", "check a?", `unquoted '?'`},
		{"glob bracket", "check [ab]", `unquoted '['`},
		{"brace expansion", "check a{b,c}", `unquoted '{'`},
		{"newline", "check\nreboot", `unquoted '\n'`},
		{"comment", "check #x", `at byte 6: '#' at the start of a word`},
		{"tilde", "check ~/x", `'~' at the start of a word`},
		{"assignment", "PATH=/tmp check", `"PATH=" is a variable assignment to a shell, not a program`},
		{"assignment alone", "A_1=", `"A_1=" is a variable assignment`},
		{"NUL", "check a\x00b", "at byte 7: a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitCommand(tc.have)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SplitCommand(%q) = %q, %v; want an error with %q", tc.have, got, err, tc.want)
			}
		})
	}
}

// TestSplitCommandMatchesShell checks the promise of SplitCommand's
// rules: /bin/sh splits every command it accepts into the same words.
func TestSplitCommandMatchesShell(t *testing.T) {
	testenv.RequireTool(t, "sh")
	sh, _ := exec.LookPath("sh")
	for _, tc := range splitCases {
		// printf prints each word the shell gives it, NUL-terminated
		out, err := exec.Command(sh, "-c", `printf '%s\0' `+tc.have).Output()
		if err != nil {
			t.Errorf("sh -c %q: %v", tc.have, err)
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: sh splits %q into %q, SplitCommand into %q", tc.name, tc.have, got, tc.want)
		}
	}
}

func TestQuoteCommand(t *testing.T) {
	for _, words := range [][]string{
		{"/bin/check", "a", "b"},
		{"check", "", "a b", "it's", `"x"`, "$X", "a;b", "#c", "~d", "*", "\n", `\`},
		{"A=b", "c=d"},
		{"check", "--url=http://[2001:db8::1]:80/?a=1&b"},
	} {
		cmd := QuoteCommand(words)
		got, err := SplitCommand(cmd)
		if err != nil || !slices.Equal(got, words) {
			t.Errorf("QuoteCommand(%q) = %q, which splits into %q, %v", words, cmd, got, err)
		}
	}
	if got, want := QuoteCommand([]string{"/bin/check", "-p", "80"}), "/bin/check -p 80"; got != want {
		t.Errorf("QuoteCommand quotes plain words: %q, want %q", got, want)
	}
}
