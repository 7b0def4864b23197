// SPDX-License-Identifier: Apache-2.0

// Package doctor checks a host against what xlb's data path needs and
// says, for each problem, the command that fixes it (xlb doctor). The
// daemon runs the checks that concern its own start too and shows their
// findings in xlb status.
package doctor

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Severity says how bad a finding is.
type Severity string

const (
	OK      Severity = "ok"
	Unknown Severity = "unknown" // the check could not tell
	Warning Severity = "warning" // works, but not as the operator expects
	Problem Severity = "problem" // some traffic is lost or refused
)

// Finding is the result of one check.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// What is the finding, one sentence; Fix the command (or the change)
	// that fixes it, "" when nothing needs fixing.
	What string `json:"what"`
	Fix  string `json:"fix,omitempty"`
}

// PinPath checks that the pins in pin outlive the daemon: pins are on,
// and the bpffs they are on is the host's, not one private to the
// daemon's mount namespace (as under `ip netns exec`, which remounts
// /sys): a crash or restart then loses the data path and the record of
// the host changes, and the next start refuses the VIPs the daemon had
// added itself.
func PinPath(pin string) Finding {
	f := Finding{Check: "pin path"}
	switch pin {
	case "", "none":
		f.Severity, f.What = Warning, "pins are off (--pin-path none): a restart or a crash loses the data path and its connections"
		f.Fix = "start the daemon with a --pin-path on the host's bpffs (the default, /sys/fs/bpf/xlb)"
		return f
	}
	private, err := privateMount(pin, "/proc/self/ns/mnt", "/proc/1/ns/mnt", "/proc/1/root")
	switch {
	case err != nil:
		f.Severity, f.What = Unknown, fmt.Sprintf("cannot tell whether the pin path %s is on the host's bpffs: %v", pin, err)
	case private:
		f.Severity = Problem
		f.What = fmt.Sprintf("the pin path %s is on a bpffs private to the daemon's mount namespace (as under `ip netns exec`, "+
			"which remounts /sys): a restart or a crash loses the data path and the record of host changes, and the next "+
			"start refuses the VIPs the daemon had added itself", pin)
		f.Fix = "run the daemon in the namespace's network only: nsenter --net=/run/netns/NAME -- xlb daemon ..."
	default:
		f.Severity, f.What = OK, fmt.Sprintf("pins in %s outlive the daemon", pin)
	}
	return f
}

// privateMount reports whether path, seen from the mount namespace self,
// is another file than the same path seen from the namespace of init
// (initNS, whose root is initRoot): the mount under it is the caller's
// alone. In init's own namespace nothing is private.
func privateMount(path, self, initNS, initRoot string) (bool, error) {
	a, err := os.Readlink(self)
	if err != nil {
		return false, err
	}
	b, err := os.Readlink(initNS)
	if err != nil {
		return false, err
	}
	if a == b {
		return false, nil
	}
	var mine, theirs unix.Stat_t
	if err := unix.Stat(path, &mine); err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Stat(initRoot+path, &theirs); err != nil {
		return true, nil // init does not see it at all
	}
	return mine.Dev != theirs.Dev || mine.Ino != theirs.Ino, nil
}

// Forwarding checks that IP forwarding is on in this network namespace:
// the FIB lookup XDP uses answers "forwarding disabled" without it.
func Forwarding() []Finding {
	var out []Finding
	for _, s := range []struct{ name, path string }{
		{"net.ipv4.ip_forward", "/proc/sys/net/ipv4/ip_forward"},
		{"net.ipv6.conf.all.forwarding", "/proc/sys/net/ipv6/conf/all/forwarding"},
	} {
		f := Finding{Check: "sysctl " + s.name}
		b, err := os.ReadFile(s.path)
		switch v := strings.TrimSpace(string(b)); {
		case err != nil:
			f.Severity, f.What = Unknown, fmt.Sprintf("cannot read %s: %v", s.name, err)
		case v != "1":
			f.Severity, f.What = Problem, fmt.Sprintf("%s is %s: the data path's FIB lookups answer \"forwarding disabled\" and it drops what it would forward", s.name, v)
			f.Fix = fmt.Sprintf("sysctl -w %s=1, and in /etc/sysctl.d/ to keep it", s.name)
		default:
			f.Severity, f.What = OK, s.name+" is 1"
		}
		out = append(out, f)
	}
	return out
}
