// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
)

// corpus is the keepalived package's test corpus.
const corpus = "../../internal/keepalived/testdata/"

// runImport runs xlb import with args and returns stdout and stderr.
func runImport(g *globalFlags, args ...string) (stdout, stderr string, err error) {
	cmd := newImportCmd(g)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// confFile writes a keepalived configuration to a temporary file.
func confFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoReals = `virtual_server 192.0.2.10 80 {
    delay_loop 5
    lb_algo rr
    lb_kind FNAT
    protocol TCP
    real_server 10.0.0.1 80 {
        TCP_CHECK {
            connect_timeout 2
        }
    }
    real_server 10.0.0.2 80 {
        TCP_CHECK {
            connect_timeout 2
        }
    }
}
`

func TestImportCommand(t *testing.T) {
	clean := confFile(t, twoReals)
	for _, tc := range []struct {
		name       string
		have       []string
		json       bool
		wantOut    []string // substrings of stdout, in order
		wantErrOut []string // substrings of stderr, in order
		wantErr    string   // substring of the error; "" for none
		wantUsage  bool
	}{
		{name: "YAML to stdout, the list to stderr",
			have:    []string{"keepalived", corpus + "nat_web.conf", "--interface", "eth0", "--laddr", "198.51.100.250"},
			wantOut: []string{"# Converted from " + corpus + "nat_web.conf", "interfaces:\n  - eth0", "vip: 192.0.2.10", "port: 80", "scheduler: wrr"},
			wantErrOut: []string{corpus + "nat_web.conf:6: notification_email {...}: xlb sends no e-mail",
				corpus + "nat_web.conf:20: lb_kind NAT: xlb forwards in FullNAT: the reals see a local IP, not the client",
				"imported 2 services with 5 reals; 10 lines not imported\n"}},
		{name: "everything imported", have: []string{"keepalived", clean, "-i", "eth0", "-z", "198.51.100.250,2001:db8::fe"},
			wantOut: []string{"local_ips:\n      - 198.51.100.250"}, wantErrOut: []string{"imported 1 service with 2 reals; 0 lines not imported\n"}},
		{name: "strict passes when everything is imported", have: []string{"keepalived", clean, "-i", "eth0", "-z", "198.51.100.250", "--strict"},
			wantOut: []string{"vip: 192.0.2.10"}},
		{name: "strict fails, with exit status 1, after printing",
			have:    []string{"keepalived", corpus + "nat_web.conf", "-i", "eth0", "-z", "198.51.100.250", "--strict"},
			wantOut: []string{"vip: 192.0.2.10"}, wantErrOut: []string{"lb_kind NAT"}, wantErr: "--strict: 10 lines not imported; 0 warnings"},
		{name: "no interface and no local IP: warnings, never hidden", have: []string{"keepalived", clean},
			wantOut: []string{"interfaces: []"},
			wantErrOut: []string{"keepalived.conf:1: virtual_server 192.0.2.10 80 {...}: no IPv4 local IP: FullNAT needs one: pass --laddr",
				"warning: no --interface given", "warning: the configuration does not validate: interfaces: at least one interface is required",
				"imported 1 service with 2 reals; 1 line not imported"}},
		{name: "strict fails on warnings too", have: []string{"keepalived", clean, "-z", "198.51.100.250", "--strict"},
			wantErr: "--strict: 0 lines not imported; 2 warnings"},
		{name: "json", have: []string{"keepalived", corpus + "nat_web.conf", "-i", "eth0", "-z", "198.51.100.250"}, json: true,
			wantOut: []string{`"config": {`, `"vip": "192.0.2.10"`, `"interval": "6s"`, `"unmapped": [`,
				`"line": 6`, `"text": "notification_email {...}"`, `"why": "xlb sends no e-mail"`, `"warnings": [`}},
		{name: "no file", have: []string{"keepalived"}, wantUsage: true, wantErr: "want one keepalived configuration file"},
		{name: "two files", have: []string{"keepalived", "a", "b"}, wantUsage: true},
		{name: "no format", have: []string{}, wantUsage: true, wantErr: "which format?"},
		{name: "unknown format", have: []string{"haproxy", "x.cfg"}, wantUsage: true, wantErr: `unknown format "haproxy"`},
		{name: "bad --laddr", have: []string{"keepalived", clean, "--laddr", "10.0.0.300"}, wantUsage: true, wantErr: "10.0.0.300"},
		{name: "unknown flag", have: []string{"keepalived", clean, "--bogus"}, wantUsage: true},
		{name: "missing file", have: []string{"keepalived", "/nonexistent/keepalived.conf"}, wantUsage: true,
			wantErr: "/nonexistent/keepalived.conf"},
		{name: "syntax error names file and line", have: []string{"keepalived", confFile(t, "virtual_server 192.0.2.1 80 {\n  real_server 10.0.0.1 80 {\n}\n")},
			wantUsage: true, wantErr: "keepalived.conf:1: the { opened on this line is not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runImport(&globalFlags{json: tc.json}, tc.have...)
			var ue usageError
			if errors.As(err, &ue) != tc.wantUsage {
				t.Fatalf("error %v; want a usage error: %v", err, tc.wantUsage)
			}
			switch {
			case tc.wantErr == "" && err != nil && !tc.wantUsage:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			inOrder(t, "stdout", out, tc.wantOut)
			inOrder(t, "stderr", errOut, tc.wantErrOut)
		})
	}
}

// inOrder checks that s holds each of want, in order.
func inOrder(t *testing.T, what, s string, want []string) {
	t.Helper()
	rest := s
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s lacks %q (in order):\n%s", what, w, s)
		}
		rest = rest[i+len(w):]
	}
}

// TestImportOutput checks that -o writes the file, which the daemon's
// parser reads back, and leaves stdout alone; and that --json is valid
// JSON carrying the configuration and the list.
func TestImportOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "xlb.yaml")
	stdout, stderr, err := runImport(&globalFlags{}, "keepalived", corpus+"dpvs_fnat.conf", "-i", "eth0", "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing with -o", stdout)
	}
	if !strings.Contains(stderr, "written to "+out) {
		t.Errorf("stderr does not say where the file went:\n%s", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data)
	if err != nil {
		t.Fatalf("the written file does not parse: %v", err)
	}
	if len(cfg.Services) != 2 || len(cfg.Services[0].LocalIPs) != 3 {
		t.Errorf("services %+v, want 2, the first with the 3 local IPs of laddr_g1", cfg.Services)
	}

	stdout, _, err = runImport(&globalFlags{json: true}, "keepalived", corpus+"udp_services.conf", "-z", "198.51.100.250")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Config   config.Config `json:"config"`
		Unmapped []struct {
			File string `json:"file"`
			Line int    `json:"line"`
			Text string `json:"text"`
			Why  string `json:"why"`
		} `json:"unmapped"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(res.Config.Services) != 3 || len(res.Unmapped) == 0 || res.Unmapped[0].Line != 6 || len(res.Warnings) == 0 {
		t.Errorf("got %+v", res)
	}
}
