// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/fuzzseed"
)

// memFiles is a file system in memory, so that a fuzzed include reads
// nothing of the host's.
type memFiles map[string][]byte

func (m memFiles) Glob(pattern string) ([]string, error) {
	var out []string
	for name := range m {
		if ok, err := filepath.Match(pattern, name); err != nil {
			return nil, err
		} else if ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m memFiles) ReadFile(name string) ([]byte, error) {
	if b, ok := m[name]; ok {
		return b, nil
	}
	return nil, &fsError{name}
}

type fsError struct{ name string }

func (e *fsError) Error() string { return "open " + e.name + ": no such file" }

// fuzzFiles are what a fuzzed configuration can include: /k/main.conf
// being the configuration itself.
var fuzzFiles = memFiles{
	"/k/reals/a.conf": []byte("real_server 10.0.0.1 80 {\n  TCP_CHECK {\n  }\n}\n"),
	"/k/reals/b.conf": []byte("real_server 10.0.0.2 80 {\n  weight 2\n}\n"),
	"/k/vs.conf":      []byte("virtual_server 192.0.2.1 80 {\n  protocol TCP\n  include reals/*.conf\n}\n"),
	"/k/loop.conf":    []byte("include loop.conf\n"),
}

// FuzzImport checks the keepalived import on any input: parsing and
// converting never panic; the conversion accounts for every statement
// (none left to the sweep), and the configuration it makes is written
// as YAML that xlb reads back as the same configuration.
func FuzzImport(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/*.conf", "testdata/conf.d/*", "testdata/reals/*") {
		f.Add(b)
	}
	for _, s := range fuzzseed.StringLiterals(f, "*_test.go") {
		f.Add([]byte(s))
	}
	opts := Options{Interfaces: []string{"eth0"}, LocalIPs: []string{"198.51.100.9", "2001:db8:f::9"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := parse("/k/main.conf", data, fuzzFiles)
		if err != nil {
			return
		}
		cfg, unmapped, err := Convert(nodes, opts)
		if err != nil {
			t.Fatalf("Convert: %v", err)
		}
		for _, u := range unmapped {
			if strings.HasPrefix(u.Why, "not imported: xlb import does not know") {
				t.Errorf("a statement only the sweep caught: %s", u)
			}
		}
		out, err := Marshal(cfg)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := config.Parse(out)
		if err != nil {
			t.Fatalf("xlb cannot read the YAML it wrote: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back.Services, cfg.Services) || !reflect.DeepEqual(back.ExecChecks, cfg.ExecChecks) {
			t.Fatalf("the YAML reads back as\n%+v\nwant\n%+v", back, cfg)
		}
		_ = back.Validate()
	})
}
