// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestValidateExecChecks checks the keys of exec checks: the command
// (split unless shell: true), the user and group (which must exist on
// this host), and exec_checks; and what Desired fills in.
func TestValidateExecChecks(t *testing.T) {
	if _, err := LookupExecUser("nobody", "daemon"); err != nil {
		testenv.Unavailable(t, "the tests need the user nobody and the group daemon: %v", err)
	}
	check := func(hc string) string {
		return with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: exec, "+hc+"}")
	}
	for _, tc := range []struct {
		name      string
		have      string
		want      string // substring of the error; "" = valid
		user      string // Desired's check: its user, group and bound
		group     string
		maxExec   int
		wantShell bool
	}{
		{name: "defaults", have: check("command: /bin/true"), user: "nobody", maxExec: 16},
		{name: "own user", have: check("command: /bin/true, user: daemon"), user: "daemon", maxExec: 16},
		{name: "own user and group", have: check("command: /bin/true, user: nobody, group: daemon"), user: "nobody", group: "daemon", maxExec: 16},
		{name: "root, explicitly", have: check("command: /bin/true, user: root"), user: "root", maxExec: 16},
		{name: "numeric user", have: check("command: /bin/true, user: '65534'"), user: "65534", maxExec: 16},
		{name: "daemon-wide user and group", have: check("command: /bin/true") + "exec_checks: {user: daemon, group: nogroup, max_running: 4}\n",
			user: "daemon", group: "nogroup", maxExec: 4},
		{name: "own user, not the daemon-wide group", have: check("command: /bin/true, user: nobody") + "exec_checks: {user: daemon, group: daemon}\n",
			user: "nobody", maxExec: 16},
		{name: "own group, daemon-wide user", have: check("command: /bin/true, group: daemon") + "exec_checks: {user: daemon, group: nogroup}\n",
			user: "daemon", group: "daemon", maxExec: 16},
		{name: "shell", have: check(`command: "test -n \"$XLB_REAL_ADDR\" && exit 0", shell: true`), user: "nobody", maxExec: 16, wantShell: true},
		{name: "quoted words", have: check(`command: "/bin/check 'a;b' \"\\$X\""`), user: "nobody", maxExec: 16},
		{name: "shell syntax without shell", have: check(`command: "/bin/check; reboot"`),
			want: `services[0].health_check.command: at byte 10: unquoted ';', which a shell would interpret: quote it, or set shell: true`},
		{name: "variable without shell", have: check(`command: "/bin/check $XLB_REAL_ADDR"`), want: `services[0].health_check.command: at byte 11: unquoted '$'`},
		{name: "bad quoting", have: check(`command: "/bin/check 'a"`), want: `services[0].health_check.command: at byte 11: a ' that is not closed`},
		{name: "unknown user", have: check("command: /bin/true, user: xlb-no-such-user"), want: `services[0].health_check.user: no user "xlb-no-such-user" on this host`},
		{name: "not a user name", have: check("command: /bin/true, user: 'a b'"), want: `services[0].health_check.user: "a b" is not a user name`},
		{name: "unknown group", have: check("command: /bin/true, group: xlb-no-such-group"), want: `services[0].health_check.group: no group "xlb-no-such-group" on this host`},
		{name: "unknown daemon-wide user", have: check("command: /bin/true") + "exec_checks: {user: xlb-no-such-user}\n",
			want: `exec_checks.user: no user "xlb-no-such-user" on this host`},
		{name: "unknown daemon-wide user, checks without", have: valid + "exec_checks: {user: xlb-no-such-user}\n",
			want: `exec_checks.user: no user "xlb-no-such-user"`},
		{name: "unknown daemon-wide group", have: valid + "exec_checks: {group: xlb-no-such-group}\n",
			want: `exec_checks.group: no group "xlb-no-such-group" on this host`},
		{name: "max_running too low", have: valid + "exec_checks: {max_running: -1}\n", want: "exec_checks.max_running: -1: want 1 to 1024"},
		{name: "max_running too high", have: valid + "exec_checks: {max_running: 1025}\n", want: "exec_checks.max_running: 1025: want 1 to 1024"},
		{name: "user on a tcp check", have: with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: tcp, user: root, group: root, shell: true}"),
			want: "services[0].health_check.user: only exec checks use it (this one is tcp)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.have))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			d, err := c.Desired()
			checkErr(t, err, tc.want)
			if tc.want != "" {
				return
			}
			hc := d.Health[d.Services[0].Key]
			if hc.User != tc.user || hc.Group != tc.group || hc.Shell != tc.wantShell || d.MaxExecRunning != tc.maxExec {
				t.Errorf("check runs as %q:%q (shell %v), max %d; want %q:%q (shell %v), max %d",
					hc.User, hc.Group, hc.Shell, d.MaxExecRunning, tc.user, tc.group, tc.wantShell, tc.maxExec)
			}
			if c.Services[0].HealthCheck.User != "" && c.Services[0].HealthCheck.User != hc.User {
				t.Error("Desired changed the configuration's check")
			}
		})
	}
}

// TestValidateExecDefaultUserMissing checks the error when the default
// user does not exist: it names the check and says what to set. The
// lookup is stubbed by a validation that already found nobody missing.
func TestValidateExecDefaultUserMissing(t *testing.T) {
	c, err := Parse([]byte(with(t, "scheduler: rr", "scheduler: rr\n    health_check: {type: exec, command: /bin/true}")))
	if err != nil {
		t.Fatal(err)
	}
	ch := &checker{}
	ch.exec.looked = map[string]error{"u:nobody": errNoNobody}
	ch.execChecks(nil, &Desired{})
	ch.healthCheck("services[0]", c.Services[0].HealthCheck)
	want := `services[0].health_check: exec checks run as "nobody" unless they say otherwise (set user, or exec_checks.user): no user "nobody" on this host`
	if got := strings.Join(ch.problems, "\n"); got != want {
		t.Errorf("problems:\n%s\nwant:\n%s", got, want)
	}
}

// errNoNobody is the lookup error of a host without nobody.
var errNoNobody = errors.New(`no user "nobody" on this host`)
