// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheck: a valid file passes with what was and was not
// checked; a file with a wrong value and an interface the host lacks is
// refused with exit 78 and both problems named; an unreadable file and a
// missing argument are not refusals.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	valid := `interfaces: [lo]
services:
  - vip: 10.77.0.10
    port: 80
    protocol: tcp
    local_ips: [10.77.2.254]
    reals:
      - {address: 10.77.1.1, port: 8080}
`
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(valid), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := strings.NewReplacer("[lo]", "[nosuchif0]", "port: 80\n", "port: 80000\n").Replace(valid)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := run("config", "check", "--pin-path", "none", good)
	if err != nil || !strings.Contains(out, "valid (1 services, 1 reals)") || !strings.Contains(out, "not checked") {
		t.Fatalf("valid file: %v\n%s", err, out)
	}

	_, err = run("config", "check", "--pin-path", "none", bad)
	var ce codedError
	if !errors.As(err, &ce) || ce.code != exitConfig {
		t.Fatalf("broken file: %v, want exit %d", err, exitConfig)
	}
	for _, want := range []string{"services[0].port: 80000 is not a port", `interfaces[0]: "nosuchif0" is not an interface`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("broken file: %q lacks %q", err, want)
		}
	}

	if _, err := run("config", "check", filepath.Join(dir, "absent.yaml")); err == nil || errors.As(err, &ce) {
		t.Errorf("absent file: %v, want a plain error (exit 1)", err)
	}
	var ue usageError
	if _, err := run("config", "check"); !errors.As(err, &ue) {
		t.Errorf("no file: %v, want a usage error (exit 2)", err)
	}
}
