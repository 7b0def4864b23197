// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxIncludeDepth bounds nested includes.
const maxIncludeDepth = 32

// Node is one statement of a keepalived configuration: its words and,
// when it opens a { } block, the statements inside.
type Node struct {
	// File and Line are where the statement's first word is.
	File string
	Line int
	// Words are the statement's words, quotes removed; Words[0] is the
	// keyword.
	Words []string
	// HasBlock tells that a { } block follows the words (Block may be
	// empty).
	HasBlock bool
	// Block holds the statements inside the block or, for an include
	// statement, the statements of the files it read.
	Block []*Node
	// Files are the files an include statement read, in order.
	Files []string

	seq int // reading order
}

// Keyword returns the statement's first word.
func (n *Node) Keyword() string { return n.Words[0] }

// Args returns the words after the keyword.
func (n *Node) Args() []string { return n.Words[1:] }

// IsInclude tells whether the statement is an include directive.
func (n *Node) IsInclude() bool { return includeKeywords[n.Keyword()] }

// Text returns the statement as a line of keepalived configuration: its
// words, quoted where needed, and " {...}" when it opens a block.
func (n *Node) Text() string {
	parts := make([]string, len(n.Words))
	for i, w := range n.Words {
		parts[i] = quoteWord(w)
	}
	s := strings.Join(parts, " ")
	if n.HasBlock {
		s += " {...}"
	}
	return s
}

// quoteWord quotes a word that would not read back as one word.
func quoteWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\r\n\"'{}#!\\") {
		return w
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(w) + `"`
}

// ParseFile reads the keepalived configuration at path and the files it
// includes. Errors name the file and line.
func ParseFile(path string) ([]*Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read keepalived configuration: %w", err)
	}
	return Parse(path, data)
}

// Parse parses src, the contents of the file name. Relative includes are
// read from name's directory.
func Parse(name string, src []byte) ([]*Node, error) {
	return parse(name, src, hostFiles{})
}

// parse is Parse with includes read from files.
func parse(name string, src []byte, files fileSystem) ([]*Node, error) {
	p := &parser{files: files}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.open = []string{abs}
	return p.file(name, src)
}

// parser builds the tree of one configuration and its includes.
type parser struct {
	seq   int
	open  []string // absolute paths of the files being read, outermost first
	files fileSystem
}

// fileSystem is where includes are read from: the host's files, or a
// test's.
type fileSystem interface {
	Glob(pattern string) ([]string, error)
	ReadFile(name string) ([]byte, error)
}

// hostFiles are the host's files.
type hostFiles struct{}

func (hostFiles) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }
func (hostFiles) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }

// stream walks a file's tokens.
type stream struct {
	toks []token
	i    int
}

// next returns the next token, or false at the end.
func (s *stream) next() (token, bool) {
	if s.i >= len(s.toks) {
		return token{}, false
	}
	s.i++
	return s.toks[s.i-1], true
}

// file parses one file's statements.
func (p *parser) file(name string, src []byte) ([]*Node, error) {
	toks, err := lex(name, src)
	if err != nil {
		return nil, err
	}
	return p.block(name, &stream{toks: toks}, 0)
}

// block parses statements until the } that closes the block opened on
// line open, or, at the top of a file (open 0), until the end.
func (p *parser) block(file string, s *stream, open int) ([]*Node, error) {
	var out []*Node
	var words []string
	line := 0
	flush := func() error {
		if len(words) == 0 {
			return nil
		}
		p.seq++
		n := &Node{File: file, Line: line, Words: words, seq: p.seq}
		words = nil
		out = append(out, n)
		if includeKeywords[n.Keyword()] {
			return p.include(n)
		}
		return nil
	}
	for {
		t, ok := s.next()
		if !ok {
			if err := flush(); err != nil {
				return nil, err
			}
			if open > 0 {
				return nil, fmt.Errorf("%s:%d: the { opened on this line is not closed", file, open)
			}
			return out, nil
		}
		switch t.kind {
		case tokWord:
			if len(words) == 0 {
				line = t.line
			}
			words = append(words, t.text)
		case tokEOL:
			if err := flush(); err != nil {
				return nil, err
			}
		case tokOpen:
			if err := flush(); err != nil {
				return nil, err
			}
			// A { opens the block of the statement on its line or, alone
			// on its line, of the statement before it.
			if len(out) == 0 || out[len(out)-1].HasBlock {
				return nil, fmt.Errorf("%s:%d: a { with no keyword before it", file, t.line)
			}
			owner := out[len(out)-1]
			if owner.IsInclude() {
				return nil, fmt.Errorf("%s:%d: %s takes a file name, not a { } block", file, t.line, owner.Keyword())
			}
			kids, err := p.block(file, s, t.line)
			if err != nil {
				return nil, err
			}
			owner.HasBlock, owner.Block = true, kids
		case tokClose:
			if err := flush(); err != nil {
				return nil, err
			}
			if open == 0 {
				return nil, fmt.Errorf("%s:%d: a } with no { to close", file, t.line)
			}
			return out, nil
		}
	}
}

// include reads the files an include statement names: a glob, with csh
// braces, relative to the including file's directory. A pattern that
// matches nothing is no error (keepalived's include allows it); the
// converter lists it.
func (p *parser) include(n *Node) error {
	where := fmt.Sprintf("%s:%d", n.File, n.Line)
	if len(n.Words) < 2 {
		return fmt.Errorf("%s: %s needs a file name", where, n.Keyword())
	}
	pattern := n.Words[1]
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(n.File), pattern)
	}
	if len(p.open) > maxIncludeDepth {
		return fmt.Errorf("%s: includes nest more than %d deep", where, maxIncludeDepth)
	}
	seen := map[string]bool{}
	n.Files = []string{}
	patterns := expandBraces(pattern)
	if len(patterns) > maxIncludePatterns {
		return fmt.Errorf("%s: include %q: its braces make more than %d patterns", where, n.Words[1], maxIncludePatterns)
	}
	for _, pat := range patterns {
		matches, err := p.files.Glob(pat)
		if err != nil {
			return fmt.Errorf("%s: include %q: %w", where, n.Words[1], err)
		}
		for _, f := range matches {
			if seen[f] {
				continue
			}
			seen[f] = true
			if err := p.includeFile(n, where, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// includeFile parses one included file into n.
func (p *parser) includeFile(n *Node, where, f string) error {
	abs, err := filepath.Abs(f)
	if err != nil {
		return fmt.Errorf("%s: include %s: %w", where, f, err)
	}
	for _, o := range p.open {
		if o == abs {
			return fmt.Errorf("%s: include cycle: %s is already being read", where, f)
		}
	}
	data, err := p.files.ReadFile(f)
	if err != nil {
		return fmt.Errorf("%s: include: %w", where, err)
	}
	p.open = append(p.open, abs)
	nodes, err := p.file(f, data)
	p.open = p.open[:len(p.open)-1]
	if err != nil {
		return err
	}
	n.Files = append(n.Files, f)
	n.Block = append(n.Block, nodes...)
	return nil
}

// maxIncludePatterns bounds the patterns an include's braces expand
// to: each {a,b} doubles them.
const maxIncludePatterns = 1024

// expandBraces expands csh braces: "a/{b,c{d,e}}.conf" is a/b.conf,
// a/cd.conf and a/ce.conf. Unbalanced braces are left as they are.
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	depth, start, end := 0, open+1, -1
	var alts []string
scan:
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, s[start:i])
				start = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, s[start:i])
				end = i
				break scan
			}
		}
	}
	if end < 0 {
		return []string{s}
	}
	var out []string
	for _, a := range alts {
		out = append(out, expandBraces(s[:open]+a+s[end+1:])...)
		if len(out) > maxIncludePatterns {
			break // too many: the caller refuses them all
		}
	}
	return out
}
