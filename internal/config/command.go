// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"fmt"
	"strings"
)

// An exec check without `shell: true` is run directly, without a shell:
// its command is split into words by SplitCommand. The rules are a
// subset of the shell's, chosen so that a command SplitCommand accepts
// gives /bin/sh -c the same words:
//
//   - words are separated by spaces and tabs;
//   - '...' keeps everything up to the next ' as it is;
//   - "..." keeps everything up to the next unescaped ", where \" \\ \$
//     and \` stand for the character after the backslash (any other
//     backslash is kept);
//   - outside quotes, a backslash keeps the next character as it is;
//   - nothing is expanded: no variables, globs, ~ or command
//     substitution. Characters the shell would treat specially are
//     refused where they are not quoted: | & ; < > ( ) $ ` * ? [ { and a
//     newline, # and ~ at the start of a word, and an unquoted NAME= at
//     the start of the first word; $ and ` are refused unescaped inside
//     "..." too. Quote such a character to pass it on as it is, or set
//     shell: true to have /bin/sh interpret it.

// shellSpecial are the characters refused outside quotes.
const shellSpecial = "|&;<>()$`*?[{\n"

// CommandError says why SplitCommand refused a command.
type CommandError struct {
	Offset int    // byte offset in the command
	Msg    string // what is wrong there
	// Shell tells that a shell would interpret what is there: quoting
	// it, or shell: true, is the way out.
	Shell bool
}

func (e *CommandError) Error() string {
	if e.Shell {
		return fmt.Sprintf("at byte %d: %s: quote it, or set shell: true", e.Offset, e.Msg)
	}
	return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg)
}

// splitter is the state of one SplitCommand.
type splitter struct {
	s     string
	words []string
	cur   strings.Builder
	word  bool // a word is under way (even an empty '')
	// bare is true while the first word has had only unquoted name
	// characters: NAME= then would be an assignment to the shell.
	bare bool
}

// SplitCommand splits an exec check's command into the program and its
// arguments, by the rules above. It refuses an empty command, an
// unterminated quote, a trailing backslash and unquoted shell syntax.
func SplitCommand(s string) ([]string, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, &CommandError{i, "a NUL byte", false}
	}
	p := &splitter{s: s, bare: true}
	for i := 0; i < len(s); i++ {
		c := s[i]
		var err error
		switch {
		case c == ' ' || c == '\t':
			p.endWord()
			continue
		case c == '\'':
			i, err = p.single(i)
		case c == '"':
			i, err = p.double(i)
		case c == '\\':
			if i+1 == len(s) || s[i+1] == '\n' {
				return nil, &CommandError{i, "a backslash at the end of the command or of a line", false}
			}
			i++
			p.add(s[i], false)
		case strings.IndexByte(shellSpecial, c) >= 0:
			return nil, &CommandError{i, fmt.Sprintf("unquoted %q, which a shell would interpret", c), true}
		case (c == '#' || c == '~') && !p.word:
			return nil, &CommandError{i, fmt.Sprintf("%q at the start of a word, which a shell would interpret", c), true}
		case c == '=' && p.bare && p.word && len(p.words) == 0:
			return nil, &CommandError{i, fmt.Sprintf("%q is a variable assignment to a shell, not a program", p.cur.String()+"="), true}
		default:
			p.add(c, isNameByte(c, p.cur.Len() == 0))
		}
		if err != nil {
			return nil, err
		}
	}
	p.endWord()
	switch {
	case len(p.words) == 0:
		return nil, errors.New("no command")
	case p.words[0] == "":
		return nil, &CommandError{0, "the program name is empty", false}
	}
	return p.words, nil
}

// add appends c to the current word; name tells whether c keeps the
// first word a possible variable name.
func (p *splitter) add(c byte, name bool) {
	p.cur.WriteByte(c)
	p.word = true
	if !name {
		p.bare = false
	}
}

func (p *splitter) endWord() {
	if !p.word {
		return
	}
	p.words = append(p.words, p.cur.String())
	p.cur.Reset()
	p.word, p.bare = false, false
}

// single reads '...' starting at i and returns the index of its end.
func (p *splitter) single(i int) (int, error) {
	end := strings.IndexByte(p.s[i+1:], '\'')
	if end < 0 {
		return 0, &CommandError{i, "a ' that is not closed", false}
	}
	p.quoted(p.s[i+1 : i+1+end])
	return i + 1 + end, nil
}

// double reads "..." starting at i and returns the index of its end.
func (p *splitter) double(i int) (int, error) {
	start := i
	var b strings.Builder
	for i++; i < len(p.s); i++ {
		switch c := p.s[i]; c {
		case '"':
			p.quoted(b.String())
			return i, nil
		case '\\':
			if i+1 < len(p.s) && strings.IndexByte("\"\\$`", p.s[i+1]) >= 0 {
				i++
				b.WriteByte(p.s[i])
				continue
			}
			if i+1 < len(p.s) && p.s[i+1] == '\n' {
				return 0, &CommandError{i, "a backslash at the end of a line", false}
			}
			b.WriteByte(c)
		case '$', '`':
			return 0, &CommandError{i, fmt.Sprintf("%q inside \"...\", which a shell would expand (write \\%c)", c, c), true}
		default:
			b.WriteByte(c)
		}
	}
	return 0, &CommandError{start, `a " that is not closed`, false}
}

// quoted appends a quoted part to the current word.
func (p *splitter) quoted(s string) {
	p.cur.WriteString(s)
	p.word, p.bare = true, false
}

// isNameByte tells whether c can be in a shell variable name (first:
// at its start).
func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// QuoteCommand joins words into a command that SplitCommand (and a
// shell) splits back into the same words: a word of only safe
// characters is written as it is, any other in single quotes.
func QuoteCommand(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, safeWordChars) == "" && (i > 0 || !strings.Contains(w, "=")) {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// safeWordChars need no quoting anywhere in a word.
const safeWordChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-"
