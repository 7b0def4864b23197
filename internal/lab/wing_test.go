// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The shape of the tree, checked where CI sees it: the product never
// depends on the wing or on a test helper, and no product folder grows
// past its share of the code (docs/architecture.md).

const module = "github.com/xlb-dev/xlb"

// wing is the import path of this folder: every package under it measures.
const wing = module + "/internal/lab"

// testHelpers are the product-side packages written for tests only: a
// package that ships must not depend on them.
var testHelpers = []string{
	module + "/internal/testenv",
	module + "/internal/labtest",
	module + "/internal/fuzzseed",
	module + "/internal/api/apitest",
	module + "/internal/apply/applytest",
}

// maxFolderShare is the most of the non-test, non-generated Go lines one
// folder directly under internal/ may hold (the wing excepted).
const maxFolderShare = 0.15

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Deps       []string
}

func inWing(path string) bool { return path == wing || strings.HasPrefix(path, wing+"/") }

// listPackages runs go list over the whole module from its root.
func listPackages(t *testing.T) (root string, pkgs []listedPackage) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	root, err = filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages in %s: not the module's tree", len(pkgs), root)
	}
	return root, pkgs
}

// TestProductImportsNoWing fails on every product package that depends,
// directly or not, on a package of the wing or on a test helper, and on
// cmd/xlb depending on a test helper. _test.go files are not counted:
// product tests may use the wing's namespace helpers.
func TestProductImportsNoWing(t *testing.T) {
	_, pkgs := listPackages(t)
	var bad []string
	for _, p := range pkgs {
		if inWing(p.ImportPath) || slices.Contains(testHelpers, p.ImportPath) {
			continue
		}
		isCmd := strings.HasPrefix(p.ImportPath, module+"/cmd/")
		for _, d := range p.Deps {
			if slices.Contains(testHelpers, d) || (!isCmd && inWing(d)) {
				bad = append(bad, fmt.Sprintf("%s depends on %s", p.ImportPath, d))
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("the product depends on the wing or on a test helper:\n%s", strings.Join(bad, "\n"))
	}
}

// TestNoFolderOutgrowsItsShare fails when a folder directly under
// internal/ (the wing excepted) holds more than maxFolderShare of the
// module's non-test, non-generated Go lines.
func TestNoFolderOutgrowsItsShare(t *testing.T) {
	root, pkgs := listPackages(t)
	total := 0
	perFolder := map[string]int{}
	for _, p := range pkgs {
		for _, f := range p.GoFiles {
			n, generated := countLines(t, filepath.Join(p.Dir, f))
			if generated {
				continue
			}
			total += n
			rel, err := filepath.Rel(filepath.Join(root, "internal"), p.Dir)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue // cmd/xlb
			}
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if top != "lab" {
				perFolder[top] += n
			}
		}
	}
	folders := make([]string, 0, len(perFolder))
	for f := range perFolder {
		folders = append(folders, f)
	}
	sort.Strings(folders)
	for _, f := range folders {
		share := float64(perFolder[f]) / float64(total)
		t.Logf("internal/%s: %d of %d lines (%.1f%%)", f, perFolder[f], total, 100*share)
		if share > maxFolderShare {
			t.Errorf("internal/%s holds %.1f%% of the Go code (%d of %d lines), over %.0f%%: split it",
				f, 100*share, perFolder[f], total, 100*maxFolderShare)
		}
	}
}

// countLines counts a Go file's lines and tells whether it is generated
// (the "Code generated ... DO NOT EDIT." line Go's tools write).
func countLines(t *testing.T, path string) (n int, generated bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, "DO NOT EDIT.") {
			generated = true
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return n, generated
}
