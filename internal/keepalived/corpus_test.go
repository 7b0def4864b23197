// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml and *.unmapped from the code's output (then read them: they must be right)")

// corpusOptions are the options every corpus file is imported with.
var corpusOptions = Options{Interfaces: []string{"eth0"}, LocalIPs: []string{"198.51.100.250", "2001:db8:ffff::250"}}

// TestCorpus imports each testdata/*.conf and compares the configuration
// with FILE.yaml and the unmapped list with FILE.unmapped, one
// "LINE: TEXT: WHY" per line (FILE:LINE for an included file).
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("the corpus has %d files, want at least 8", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".conf")
		t.Run(name, func(t *testing.T) {
			cfg, unmapped, err := ImportFile(f, corpusOptions)
			if err != nil {
				t.Fatal(err)
			}
			gotYAML, err := Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			gotList := formatUnmapped(unmapped, f)
			base := strings.TrimSuffix(f, ".conf")
			if *update {
				for path, data := range map[string][]byte{base + ".yaml": gotYAML, base + ".unmapped": []byte(gotList)} {
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			compareFile(t, base+".yaml", string(gotYAML))
			compareFile(t, base+".unmapped", gotList)

			// The YAML reads back as the same configuration.
			back, err := config.Parse(gotYAML)
			if err != nil {
				t.Fatalf("the YAML does not parse: %v", err)
			}
			if !reflect.DeepEqual(back.Services, cfg.Services) {
				t.Errorf("the YAML reads back as %+v, want %+v", back.Services, cfg.Services)
			}
			for _, u := range unmapped {
				if strings.HasPrefix(u.Why, "not imported: xlb import does not know") {
					t.Errorf("a statement only the sweep caught: %s", u)
				}
			}
		})
	}
}

// formatUnmapped writes the list as the golden files hold it.
func formatUnmapped(list []Unmapped, main string) string {
	var b strings.Builder
	for _, u := range list {
		where := strconv.Itoa(u.Line)
		if u.File != main {
			rel, err := filepath.Rel(filepath.Dir(main), u.File)
			if err != nil {
				rel = u.File
			}
			where = rel + ":" + where
		}
		b.WriteString(where + ": " + u.Text + ": " + u.Why + "\n")
	}
	return b.String()
}

func compareFile(t *testing.T, path, got string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCorpus -update, then check the file)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
