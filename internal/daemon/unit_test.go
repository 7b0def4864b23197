// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// unitPath is the systemd unit that runs the daemon.
const unitPath = "../../dist/xlb.service"

// readUnit parses a systemd unit file into "Section.Key" -> the values
// of each line that sets it, in order. Comments and blank lines are
// skipped; a line continued with a backslash is not supported (the unit
// has none).
func readUnit(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continued lines are not supported here", path, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is not KEY=VALUE in a section", path, n, line)
			}
			out[section+"."+strings.TrimSpace(k)] = append(out[section+"."+strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// words returns every word the lines of a key set, in order.
func words(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// TestUnitHardening checks that the unit keeps its sandbox: none of
// these lines may go without this test failing.
func TestUnitHardening(t *testing.T) {
	u := readUnit(t, unitPath)
	for _, tc := range []struct{ key, want string }{
		{"Service.NoNewPrivileges", "yes"},
		{"Service.ProtectSystem", "strict"},
		{"Service.ProtectHome", "yes"},
		{"Service.PrivateTmp", "yes"},
		{"Service.ProtectKernelTunables", "yes"},
		{"Service.ProtectKernelModules", "yes"},
		{"Service.ProtectControlGroups", "yes"},
		{"Service.RestrictSUIDSGID", "yes"},
		{"Service.UMask", "0077"},
		{"Service.RuntimeDirectory", "xlb"},
	} {
		if got := u[tc.key]; len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s = %q, want exactly %q", tc.key, got, tc.want)
		}
	}
	for _, tc := range []struct {
		key  string
		want []string // the exact set of words
	}{
		// what the daemon needs (see the comment in the unit)
		{"Service.CapabilityBoundingSet", []string{"CAP_BPF", "CAP_CHOWN", "CAP_KILL", "CAP_NET_ADMIN", "CAP_PERFMON", "CAP_SETGID", "CAP_SETUID", "CAP_SYS_ADMIN"}},
		{"Service.RestrictAddressFamilies", []string{"AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX"}},
		// the pins and the socket's directory, nothing else
		{"Service.ReadWritePaths", []string{"/run/xlb", "/sys/fs/bpf"}},
		// a refused configuration (78) and incompatible pinned maps (79)
		{"Service.RestartPreventExitStatus", []string{"78", "79"}},
	} {
		got := words(u[tc.key])
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s = %q, want %q", tc.key, got, tc.want)
		}
	}
	bound := words(u["Service.CapabilityBoundingSet"])
	for _, c := range words(u["Service.AmbientCapabilities"]) {
		if !slices.Contains(bound, c) {
			t.Errorf("AmbientCapabilities has %s, which the bounding set takes away", c)
		}
	}
	if got := u["Service.User"]; got != nil {
		t.Errorf("User=%q: the daemon runs as root (exec checks need it to change user)", got)
	}
}
