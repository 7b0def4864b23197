// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestExecAsUser runs exec checks from root, as the daemon does, and
// checks who their commands run as: nobody by default, with nobody's
// groups and no capability; root only when the check says so.
func TestExecAsUser(t *testing.T) {
	testenv.RequireRoot(t, "runs health check commands as another user")
	nobody, err := config.LookupExecUser("nobody", "")
	if err != nil {
		testenv.Unavailable(t, "no user nobody: %v", err)
	}
	daemonGID, err := config.LookupGroup("daemon")
	if err != nil {
		testenv.Unavailable(t, "no group daemon: %v", err)
	}
	// `id` writes what the command runs as into DIR/id
	const report = `/bin/sh -c 'echo "$(id -u) $(id -g) $(id -G) $(grep CapEff /proc/self/status | cut -f2)" > DIR/id'`
	for _, tc := range []struct {
		name        string
		user, group string
		want        string // uid gid groups... capabilities
	}{
		{name: "default user", want: "65534 65534 65534 0000000000000000"},
		{name: "nobody", user: "nobody", want: "65534 65534 65534 0000000000000000"},
		{name: "nobody by id", user: "65534", want: "65534 65534 65534 0000000000000000"},
		{name: "nobody with the daemon group", user: "nobody", group: "daemon", want: fmt.Sprintf("65534 %d %d 65534 0000000000000000", daemonGID, daemonGID)},
		{name: "root when asked", user: "root", want: "0 0 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if nobody.UID != 65534 || nobody.GID != 65534 {
				testenv.Unavailable(t, "nobody is %d:%d here, not 65534:65534", nobody.UID, nobody.GID)
			}
			dir := testenv.SharedTempDir(t)
			c := config.HealthCheck{Type: "exec", User: tc.user, Group: tc.group,
				Command: strings.ReplaceAll(report, "DIR", dir)}.WithDefaults()
			if err := Check(context.Background(), c, target(t, "127.0.0.1:80")); err != nil {
				t.Fatalf("check: %v", err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "id"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); !strings.HasPrefix(got, tc.want) {
				t.Errorf("the command ran as %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExecAsNobodyNoShell checks, as nobody, that a command without
// shell: true reaches the program word for word (; and $X are not
// interpreted) and that an unquoted ; runs nothing.
func TestExecAsNobodyNoShell(t *testing.T) {
	testenv.RequireRoot(t, "runs health check commands as nobody")
	dir := testenv.SharedTempDir(t)
	for _, tc := range []struct {
		cmd   string
		ok    bool
		files []string
	}{
		{cmd: `touch 'DIR/a;b' "DIR/\$X" DIR/\$\(id\)`, ok: true, files: []string{"$(id)", "$X", "a;b"}},
		{cmd: `touch DIR/c; touch DIR/d`, files: []string{"$(id)", "$X", "a;b"}},
	} {
		c := config.HealthCheck{Type: "exec", User: "nobody", Command: strings.ReplaceAll(tc.cmd, "DIR", dir),
			Timeout: config.Duration(5 * time.Second), Interval: config.Duration(5 * time.Second)}.WithDefaults()
		err := Check(context.Background(), c, target(t, "127.0.0.1:80"))
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.cmd, err, tc.ok)
		}
		if got := dirEntries(t, dir); !slices.Equal(got, tc.files) {
			t.Errorf("%s: the directory holds %q, want %q", tc.cmd, got, tc.files)
		}
		for _, f := range tc.files {
			st, err := os.Stat(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if uid := fileUID(st); uid != 65534 {
				t.Errorf("%s is owned by uid %d, want nobody (65534)", f, uid)
			}
		}
	}
}

// TestExecUnknownUser checks that a check whose user does not exist
// fails with that reason instead of running as anyone.
func TestExecUnknownUser(t *testing.T) {
	c := config.HealthCheck{Type: "exec", User: "xlb-no-such-user", Command: "true"}.WithDefaults()
	err := Check(context.Background(), c, target(t, "127.0.0.1:80"))
	if err == nil || !strings.Contains(err.Error(), `no user "xlb-no-such-user"`) {
		t.Errorf("error %v, want one naming the missing user", err)
	}
}

// fileUID is the owner of a file.
func fileUID(st os.FileInfo) uint32 { return st.Sys().(*syscall.Stat_t).Uid }
