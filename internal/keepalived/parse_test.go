// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dump renders a tree one statement a line: its line, its words joined
// by '|' (so that word boundaries show), and its block indented.
func dump(nodes []*Node, indent string) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s%d %s", indent, n.Line, strings.Join(n.Words, "|"))
		switch {
		case n.IsInclude():
			fmt.Fprintf(&b, " <%d files>\n%s", len(n.Files), dump(n.Block, indent+"  "))
		case n.HasBlock:
			fmt.Fprintf(&b, " {\n%s%s}\n", dump(n.Block, indent+"  "), indent)
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    string
		want    string // dump of the tree
		wantErr string // substring of the error
	}{
		{name: "block on the same line", have: "virtual_server 10.0.0.1 80 {\n  delay_loop 6\n}\n",
			want: "1 virtual_server|10.0.0.1|80 {\n  2 delay_loop|6\n}\n"},
		{name: "brace on the next line", have: "virtual_server 10.0.0.1 80\n\n{\n  delay_loop 6\n}",
			want: "1 virtual_server|10.0.0.1|80 {\n  4 delay_loop|6\n}\n"},
		{name: "braces touching words", have: "HTTP_GET{\nurl{\npath /\nstatus_code 200 }}\n",
			want: "1 HTTP_GET {\n  2 url {\n    3 path|/\n    4 status_code|200\n  }\n}\n"},
		{name: "one-line block", have: "virtual_ipaddress { 192.0.2.1/24 dev eth0 }\nnext",
			want: "1 virtual_ipaddress {\n  1 192.0.2.1/24|dev|eth0\n}\n2 next\n"},
		{name: "empty block", have: "real_server 10.0.0.1 80 {}\n", want: "1 real_server|10.0.0.1|80 {\n}\n"},
		{name: "comments", have: "! header\n# header\nweight 1 # trailing\nweight 2 ! trailing\nauth a#b\n",
			want: "3 weight|1\n4 weight|2\n5 auth|a\n"},
		{name: "quotes", have: `misc_path "/bin/check 10.0.0.1" x` + "\n" + `notify 'say "hi"' "it's"` + "\n",
			want: "1 misc_path|/bin/check 10.0.0.1|x\n2 notify|say \"hi\"|it's\n"},
		{name: "quote inside a word", have: `a"b c"d` + "\n", want: "1 ab cd\n"},
		{name: "a comment sign inside quotes", have: `regex "#1 ! ok"` + "\n", want: "1 regex|#1 ! ok\n"},
		{name: "escapes", have: `s "\x41\t\"\\\101\q"` + "\n", want: "1 s|A\t\"\\Aq\n"},
		{name: "CRLF", have: "global_defs {\r\n  router_id a\r\n}\r\n", want: "1 global_defs {\n  2 router_id|a\n}\n"},
		{name: "byte order mark", have: "\xef\xbb\xbfweight 1\n", want: "1 weight|1\n"},
		{name: "unclosed block", have: "a {\n b {\n }\n", wantErr: "t.conf:1: the { opened on this line is not closed"},
		{name: "stray close", have: "a {\n}\n}\n", wantErr: "t.conf:3: a } with no { to close"},
		{name: "open without keyword", have: "{\n}\n", wantErr: "t.conf:1: a { with no keyword before it"},
		{name: "two blocks", have: "a {\n}\n{\n}\n", wantErr: "t.conf:3: a { with no keyword before it"},
		{name: "unterminated quote", have: "a\nmisc_path \"/bin/x\n\"", wantErr: "t.conf:2: the quoted string"},
		{name: "include with a block", have: "include x.conf\n{\n}\n", wantErr: "t.conf:2: include takes a file name"},
		{name: "include without a file", have: "include\n", wantErr: "t.conf:1: include needs a file name"},
		{name: "include braces beyond bounds", have: "include /nonexistent/" + strings.Repeat("{a,b}", 40) + "\n",
			wantErr: "{a,b}\": its braces make more than 1024 patterns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := Parse(filepath.Join(t.TempDir(), "t.conf"), []byte(tc.have))
			if !checkErr(t, err, tc.wantErr) {
				return
			}
			if got := dump(nodes, ""); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// writeFiles writes files (path: contents) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInclude(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    map[string]string // files; main.conf is read
		want    string
		wantErr string
	}{
		{name: "glob, sorted, relative to the including file",
			have: map[string]string{
				"main.conf":         "include conf.d/*.conf\nlast 1\n",
				"conf.d/b.conf":     "b 1\n",
				"conf.d/a.conf":     "a 1\ninclude sub/x.conf\n",
				"conf.d/sub/x.conf": "x 1\n",
			},
			want: "1 include|conf.d/*.conf <2 files>\n  1 a|1\n  2 include|sub/x.conf <1 files>\n    1 x|1\n  1 b|1\n2 last|1\n"},
		{name: "inside a block, with braces",
			have: map[string]string{
				"main.conf": "virtual_server 10.0.0.1 80 {\n  include r/{b,a}.conf # the reals\n}\n",
				"r/a.conf":  "real_server 10.0.0.2 80 {\n}\n",
				"r/b.conf":  "real_server 10.0.0.3 80 {\n}\n",
			},
			want: "1 virtual_server|10.0.0.1|80 {\n  2 include|r/{b,a}.conf <2 files>\n    1 real_server|10.0.0.3|80 {\n    }\n    1 real_server|10.0.0.2|80 {\n    }\n}\n"},
		{name: "quoted pattern", have: map[string]string{"main.conf": `include "my conf.d/*.conf"` + "\n", "my conf.d/a.conf": "a 1\n"},
			want: "1 include|my conf.d/*.conf <1 files>\n  1 a|1\n"},
		{name: "no match", have: map[string]string{"main.conf": "include none/*.conf\n"}, want: "1 include|none/*.conf <0 files>\n"},
		{name: "cycle", have: map[string]string{"main.conf": "include a.conf\n", "a.conf": "include main.conf\n"},
			wantErr: "a.conf:1: include cycle: "},
		{name: "error in an included file names it", have: map[string]string{"main.conf": "include a.conf\n", "a.conf": "x {\n"},
			wantErr: "a.conf:1: the { opened on this line is not closed"},
		{name: "an include must balance its braces", have: map[string]string{"main.conf": "x {\ninclude a.conf\n", "a.conf": "}\n"},
			wantErr: "a.conf:1: a } with no { to close"},
		{name: "a directory", have: map[string]string{"main.conf": "include d*\n", "d1/x": ""},
			wantErr: "main.conf:1: include:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.have)
			nodes, err := ParseFile(filepath.Join(dir, "main.conf"))
			if !checkErr(t, err, tc.wantErr) {
				return
			}
			if got := dump(nodes, ""); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestIncludePositions(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"main.conf": "\ninclude a.conf\n", "a.conf": "\n\nweight 1\n"})
	nodes, err := ParseFile(filepath.Join(dir, "main.conf"))
	if err != nil {
		t.Fatal(err)
	}
	inc := nodes[0]
	if inc.File != filepath.Join(dir, "main.conf") || inc.Line != 2 {
		t.Errorf("include at %s:%d, want main.conf:2", inc.File, inc.Line)
	}
	if w := inc.Block[0]; w.File != filepath.Join(dir, "a.conf") || w.Line != 3 {
		t.Errorf("weight at %s:%d, want a.conf:3", w.File, w.Line)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want string
	}{
		{name: "words", have: "lb_kind   DR\n", want: "lb_kind DR"},
		{name: "block", have: "url {\n}\n", want: "url {...}"},
		{name: "quoted", have: `notify_up "/bin/up.sh a" ''` + "\n", want: `notify_up "/bin/up.sh a" ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := Parse("t.conf", []byte(tc.have))
			if err != nil {
				t.Fatal(err)
			}
			if got := nodes[0].Text(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpandBraces(t *testing.T) {
	for _, tc := range []struct {
		name string
		have string
		want []string
	}{
		{name: "none", have: "a/*.conf", want: []string{"a/*.conf"}},
		{name: "two", have: "a/{x,y}.conf", want: []string{"a/x.conf", "a/y.conf"}},
		{name: "nested", have: "{a,b{c,d}}e", want: []string{"ae", "bce", "bde"}},
		{name: "empty alternative", have: "x{,.d}", want: []string{"x", "x.d"}},
		{name: "unbalanced", have: "a{b", want: []string{"a{b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandBraces(tc.have); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// checkErr checks err against wantErr (a part of the message, or "" for
// success) and tells whether the caller should go on to the result.
func checkErr(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
