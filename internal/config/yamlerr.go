// SPDX-License-Identifier: Apache-2.0

package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlField matches yaml.v3's unknown-key message.
var yamlField = regexp.MustCompile(`field (\S+) not found in type config\.(\w+)`)

// yamlWhere says where in the file each type of the configuration is.
var yamlWhere = map[string]string{"Config": "at the top level", "Service": "in a service", "Real": "in a real", "Timeouts": "in timeouts", "ConnTable": "in conn_table",
	"HealthCheck": "in a health_check", "ExecChecks": "in exec_checks"}

// yamlUnmarshal matches yaml.v3's type error: "line 4: cannot unmarshal
// !!str `eighty` into int".
var yamlUnmarshal = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)$")

// yamlSyntaxLine matches the line of yaml.v3's syntax errors.
var yamlSyntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// plainYAMLError words yaml.v3's errors as one line per problem in the
// file's terms: an unknown key where it is ("line 6: unknown key
// "colour" in a service"), a value of the wrong type by its field and
// what was wanted ("services[0].port (line 4): want a number, got
// "eighty""), a tab by its name.
func plainYAMLError(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return syntaxError(data, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	lines := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		if m := yamlUnmarshal.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			lines[i] = typeProblem(&root, line, m[2], m[3], m[4])
			continue
		}
		lines[i] = yamlField.ReplaceAllStringFunc(e, func(m string) string {
			sub := yamlField.FindStringSubmatch(m)
			return fmt.Sprintf("unknown key %q %s", sub[1], yamlWhere[sub[2]])
		})
	}
	return errors.New(strings.Join(lines, "; "))
}

// syntaxError names a tab that yaml.v3 reports as a character that
// cannot start a token: YAML indents with spaces only.
func syntaxError(data []byte, err error) error {
	m := yamlSyntaxLine.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	n, _ := strconv.Atoi(m[1])
	lines := bytes.Split(data, []byte("\n"))
	for _, l := range []int{n - 1, n - 2} { // yaml.v3 may name the line after the tab's
		if l >= 0 && l < len(lines) {
			indent := lines[l][:len(lines[l])-len(bytes.TrimLeft(lines[l], " \t"))]
			if col := bytes.IndexByte(indent, '\t'); col >= 0 {
				return fmt.Errorf("line %d, column %d: a tab; YAML indents with spaces only", l+1, col+1)
			}
		}
	}
	return fmt.Errorf("line %s: %s", m[1], m[2])
}

// typeProblem words a value of the wrong type at line: its field path
// and what the field wants.
func typeProblem(root *yaml.Node, line int, tag, value, goType string) string {
	got := map[string]string{"str": "a string", "int": "a number", "float": "a number", "bool": "true or false",
		"seq": "a list", "map": "a mapping", "null": "nothing"}[tag]
	if value != "" {
		got = strconv.Quote(value)
	}
	want := wantOf(goType)
	path := nodePath(root, line, value)
	if path == "" {
		return fmt.Sprintf("line %d: want %s, got %s", line, want, got)
	}
	return fmt.Sprintf("%s (line %d): want %s, got %s", path, line, want, got)
}

// wantOf says what a Go type of the configuration takes in YAML terms.
func wantOf(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "config."):
		return "a mapping"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return goType
}

// nodePath finds the value node at line (whose text is value, when not
// empty) and returns its path in the file's terms: services[0].port.
func nodePath(n *yaml.Node, line int, value string) string {
	var walk func(n *yaml.Node, path string) (string, bool)
	walk = func(n *yaml.Node, path string) (string, bool) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p, ok := walk(c, path); ok {
					return p, true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, val := n.Content[i], n.Content[i+1]
				p := key.Value
				if path != "" {
					p = path + "." + key.Value
				}
				if val.Line == line && (value == "" || val.Value == value) && val.Kind != yaml.MappingNode {
					return p, true
				}
				if r, ok := walk(val, p); ok {
					return r, true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Kind == yaml.ScalarNode && c.Line == line && (value == "" || c.Value == value) {
					return p, true
				}
				if r, ok := walk(c, p); ok {
					return r, true
				}
			}
		}
		return "", false
	}
	p, _ := walk(n, "")
	return p
}
