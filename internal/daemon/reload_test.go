// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadConfig checks that a file that cannot be read is refused with
// the read error, not taken for an empty document.
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		have string // path
		want error
		text string // in the error
	}{
		{"missing", filepath.Join(dir, "missing.yaml"), fs.ErrNotExist, "read configuration"},
		{"a directory", dir, syscall.EISDIR, "read configuration"},
		{"empty", empty, nil, "the document is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readConfig(tc.have)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q, want it to say %q", err, tc.text)
			}
		})
	}
}

// TestReloadLogsReadError checks what a SIGHUP reload logs when the file
// cannot be read.
func TestReloadLogsReadError(t *testing.T) {
	var log bytes.Buffer
	path := filepath.Join(t.TempDir(), "gone.yaml")
	d := &Daemon{opts: Options{ConfigPath: path}, log: slog.New(slog.NewTextHandler(&log, nil))}
	d.reload()
	out := log.String()
	if !strings.Contains(out, "reload refused") || !strings.Contains(out, "no such file or directory") {
		t.Errorf("log %q: want the refusal with the read error", out)
	}
	if strings.Contains(out, "empty") {
		t.Errorf("log %q: a missing file is not an empty document", out)
	}
}
