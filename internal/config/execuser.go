// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"os/user"
	"regexp"
	"strconv"
)

// ExecChecks are the daemon-wide settings of exec health checks.
type ExecChecks struct {
	// User runs the commands of the exec checks that name no user of
	// their own: a user name or numeric id of this host (default
	// nobody). root gives every such command all of the daemon's
	// privileges: say so only for commands that need them.
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// Group is their primary group (default: the user's own).
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// MaxRunning bounds the exec check commands running at once in the
	// whole daemon (default 16). A check that finds none free waits for
	// one within its own timeout and fails if none frees in time.
	MaxRunning int `yaml:"max_running,omitempty" json:"max_running,omitempty"`
}

// Exec check defaults and limits.
const (
	DefaultExecUser       = "nobody"
	DefaultMaxExecRunning = 16
	MaxExecRunning        = 1024
)

// ExecUser is who an exec check's command runs as.
type ExecUser struct {
	Name     string
	UID, GID uint32
	// Groups are the user's supplementary groups (from the group
	// database); nil when they cannot be listed.
	Groups []uint32
	Home   string
}

// accountName is what a user or group name may look like (as useradd
// accepts them), or a numeric id.
var accountName = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}\$?$`)

// LookupExecUser resolves an exec check's user (a name, or a numeric id,
// of this host's user database; "" is DefaultExecUser) and group (""
// for the user's primary group). The supplementary groups are the
// user's.
func LookupExecUser(name, group string) (ExecUser, error) {
	if name == "" {
		name = DefaultExecUser
	}
	u, err := lookupUser(name)
	if err != nil {
		return ExecUser{}, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return ExecUser{}, fmt.Errorf("user %q: ids %s:%s are not numbers", name, u.Uid, u.Gid)
	}
	out := ExecUser{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	if group != "" {
		if out.GID, err = LookupGroup(group); err != nil {
			return ExecUser{}, err
		}
	}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil {
				out.Groups = append(out.Groups, uint32(g))
			}
		}
	}
	return out, nil
}

func lookupUser(name string) (*user.User, error) {
	if !accountName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a user name", name)
	}
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
		if u, idErr := user.LookupId(name); idErr == nil {
			return u, nil
		}
	}
	return nil, fmt.Errorf("no user %q on this host", name)
}

// LookupGroup resolves a group name, or numeric id, of this host's
// group database to its id.
func LookupGroup(name string) (uint32, error) {
	if !accountName.MatchString(name) {
		return 0, fmt.Errorf("%q is not a group name", name)
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
			g, err = user.LookupGroupId(name)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("no group %q on this host", name)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q: id %s is not a number", name, g.Gid)
	}
	return uint32(gid), nil
}
