// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestManPageIsCurrent: docs/xlb.8 is what xlb man writes (make man).
func TestManPageIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := writeMan(&b, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../docs/xlb.8")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Error("docs/xlb.8 is not what xlb man writes: run make man and commit")
	}
	for _, want := range []string{".SS xlb status", ".SS xlb doctor", `\-\-follow\fR`, ".SH EXIT STATUS"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the man page lacks %q", want)
		}
	}
}

// TestMakeInstallAndUninstall: make install-files into a DESTDIR puts the
// binary where the unit runs it, the man page, the completion, the unit,
// the dashboard, the rules, the examples and a configuration; uninstall
// removes all of it but the configuration.
func TestMakeInstallAndUninstall(t *testing.T) {
	testenv.RequireTool(t, "make")
	dir := t.TempDir()
	bin := filepath.Join(dir, "xlb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dest := filepath.Join(dir, "root")
	make := func(target string) {
		t.Helper()
		cmd := exec.Command("make", "-C", "../..", target, "DESTDIR="+dest, "XLB="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install-files")
	for _, f := range []string{"usr/local/sbin/xlb", "usr/local/share/man/man8/xlb.8", "usr/local/share/bash-completion/completions/xlb",
		"etc/systemd/system/xlb.service", "usr/local/share/xlb/grafana/xlb-dashboard.json", "usr/local/share/xlb/prometheus/xlb-rules.yml",
		"usr/local/share/doc/xlb/examples/one-arm.yaml", "etc/xlb/xlb.yaml"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("make install: %v", err)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(dest, "etc/systemd/system/xlb.service"))
	if !strings.Contains(string(unit), "ExecStart=/usr/local/sbin/xlb ") {
		t.Error("the unit does not run the installed binary")
	}
	make("uninstall")
	var left []string
	_ = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, strings.TrimPrefix(p, dest))
		}
		return nil
	})
	if strings.Join(left, " ") != "/etc/xlb/xlb.yaml" {
		t.Errorf("after make uninstall: %v, want only /etc/xlb/xlb.yaml", left)
	}
}
