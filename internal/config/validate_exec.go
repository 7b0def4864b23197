// SPDX-License-Identifier: Apache-2.0

package config

import (
	"strings"
)

// Checks of exec health checks: their command, and the user and group
// they run as, which must exist on this host.

// execDefaults are exec_checks' user and group during one validation.
type execDefaults struct {
	user, group string
	bad         bool             // exec_checks.user or .group is reported
	looked      map[string]error // lookups done: "u:NAME" and "g:NAME"
}

// lookup resolves a user (kind 'u') or group ('g') once per validation.
func (e *execDefaults) lookup(kind byte, name string) error {
	key := string(kind) + ":" + name
	if err, ok := e.looked[key]; ok {
		return err
	}
	var err error
	if kind == 'u' {
		_, err = lookupUser(name)
	} else {
		_, err = LookupGroup(name)
	}
	if e.looked == nil {
		e.looked = map[string]error{}
	}
	e.looked[key] = err
	return err
}

// execChecks checks exec_checks and sets d's bound on running commands.
func (ch *checker) execChecks(e *ExecChecks, d *Desired) {
	d.MaxExecRunning = DefaultMaxExecRunning
	ch.exec.user = DefaultExecUser
	if e == nil {
		return
	}
	if e.User != "" {
		ch.exec.user = e.User
		if err := ch.exec.lookup('u', e.User); err != nil {
			ch.addf("exec_checks.user", "%v", err)
			ch.exec.bad = true
		}
	}
	if ch.exec.group = e.Group; e.Group != "" {
		if err := ch.exec.lookup('g', e.Group); err != nil {
			ch.addf("exec_checks.group", "%v", err)
			ch.exec.bad = true
		}
	}
	switch {
	case e.MaxRunning == 0:
	case e.MaxRunning < 1 || e.MaxRunning > MaxExecRunning:
		ch.addf("exec_checks.max_running", "%d: want 1 to %d", e.MaxRunning, MaxExecRunning)
	default:
		d.MaxExecRunning = e.MaxRunning
	}
}

// execCheck checks the command of an exec check at path and fills in
// the user and group it runs as: its own, or exec_checks'.
func (ch *checker) execCheck(path string, c *HealthCheck) {
	switch {
	case strings.TrimSpace(c.Command) == "":
		ch.addf(path+".command", "an exec check needs a command")
	case !c.Shell:
		if _, err := SplitCommand(c.Command); err != nil {
			ch.addf(path+".command", "%v", err)
		}
	}
	if c.Group != "" {
		if err := ch.exec.lookup('g', c.Group); err != nil {
			ch.addf(path+".group", "%v", err)
		}
	}
	if c.User != "" {
		if err := ch.exec.lookup('u', c.User); err != nil {
			ch.addf(path+".user", "%v", err)
		}
		return
	}
	c.User = ch.exec.user
	if c.Group == "" {
		c.Group = ch.exec.group
	}
	if ch.exec.bad {
		return // exec_checks is reported already
	}
	if err := ch.exec.lookup('u', c.User); err != nil {
		ch.addf(path, "exec checks run as %q unless they say otherwise (set user, or exec_checks.user): %v", c.User, err)
	}
}
