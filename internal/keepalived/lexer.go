// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// tokKind is the kind of a token.
type tokKind uint8

const (
	tokWord  tokKind = iota // a word, quotes removed
	tokOpen                 // {
	tokClose                // }
	tokEOL                  // the end of a line
)

// token is one word, brace or end of line, with its line number.
type token struct {
	kind tokKind
	text string
	line int
}

// includeKeywords are keepalived's include directives. Their argument is
// the rest of the line, taken as it is, so that glob braces such as
// "conf.d/{a,b}.conf" are not read as blocks (keepalived, too, finds
// includes before it splits lines into words).
var includeKeywords = map[string]bool{
	"include": true, "includer": true, "includem": true, "includew": true, "includeb": true, "includea": true,
}

// lex splits a keepalived configuration into tokens. Words are separated
// by whitespace; '{' and '}' are tokens of their own even when a word
// touches them; '#' and '!' start a comment that runs to the end of the
// line; "double" or 'single' quotes make one word of what they enclose,
// with shell-like backslash escapes. file names the source in errors.
func lex(file string, src []byte) ([]token, error) {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	var toks []token
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		var err error
		if kw, rest, ok := includeLine(line); ok {
			toks = append(toks, token{kind: tokWord, text: kw, line: n})
			if rest != "" {
				toks = append(toks, token{kind: tokWord, text: rest, line: n})
			}
		} else if toks, err = lexLine(toks, line, n); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		toks = append(toks, token{kind: tokEOL, line: n})
	}
	return toks, nil
}

// includeLine recognises an include directive and returns its keyword
// and its pattern: the rest of the line without a comment, quotes or
// surrounding space.
func includeLine(line string) (kw, rest string, ok bool) {
	s := strings.TrimLeft(line, " \t")
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		end = len(s)
	}
	kw = strings.TrimRight(s[:end], "\r")
	if !includeKeywords[kw] {
		return "", "", false
	}
	rest = s[end:]
	if i := commentStart(rest); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimSpace(rest)
	if len(rest) >= 2 && (rest[0] == '"' || rest[0] == '\'') && rest[len(rest)-1] == rest[0] {
		rest = rest[1 : len(rest)-1]
	}
	return kw, rest, true
}

// commentStart returns where a comment starts in s, outside quotes, or -1.
func commentStart(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' || c == '!':
			return i
		}
	}
	return -1
}

// lexLine appends the tokens of one line (without its end) to toks.
func lexLine(toks []token, s string, line int) ([]token, error) {
	var word strings.Builder
	inWord := false
	emit := func() {
		if inWord {
			toks = append(toks, token{kind: tokWord, text: word.String(), line: line})
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\r', '\v', '\f':
			emit()
		case '#', '!':
			emit()
			return toks, nil
		case '{', '}':
			emit()
			kind := tokOpen
			if c == '}' {
				kind = tokClose
			}
			toks = append(toks, token{kind: kind, text: string(c), line: line})
		case '"', '\'':
			end, err := unquote(s, i, &word)
			if err != nil {
				return nil, err
			}
			inWord = true
			i = end
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	emit()
	return toks, nil
}

// unquote writes the quoted string that starts at s[start] to w, escapes
// resolved, and returns the index of its closing quote. Inside double
// quotes a single quote is an ordinary character, and the other way
// round.
func unquote(s string, start int, w *strings.Builder) (int, error) {
	quote := s[start]
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote:
			return i, nil
		case c == '\\' && i+1 < len(s):
			n := escape(s[i+1:], w)
			i += n
		default:
			w.WriteByte(c)
		}
	}
	return 0, fmt.Errorf("the quoted string %s is not closed on its line", s[start:])
}

// escape writes the character that the escape sequence at the start of s
// (after its backslash) stands for, and returns how many bytes of s it
// used: \a \b \E \f \n \r \t \v, \xHH, \NNN (octal), \cC (control C), and
// \C for any other C.
func escape(s string, w *strings.Builder) int {
	simple := map[byte]byte{'a': '\a', 'b': '\b', 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}
	c := s[0]
	if b, ok := simple[c]; ok {
		w.WriteByte(b)
		return 1
	}
	switch {
	case c == 'x':
		n := digits(s[1:], 2, "0123456789abcdefABCDEF")
		if n > 0 {
			v, _ := strconv.ParseUint(s[1:1+n], 16, 8)
			w.WriteByte(byte(v))
			return 1 + n
		}
	case c >= '0' && c <= '7':
		n := digits(s, 3, "01234567")
		v, _ := strconv.ParseUint(s[:n], 8, 16)
		w.WriteByte(byte(v))
		return n
	case c == 'c' && len(s) > 1:
		w.WriteByte(s[1] & 0x1f)
		return 2
	}
	w.WriteByte(c)
	return 1
}

// digits counts the leading bytes of s, at most limit, that are in set.
func digits(s string, limit int, set string) int {
	n := 0
	for n < len(s) && n < limit && strings.IndexByte(set, s[n]) >= 0 {
		n++
	}
	return n
}
