// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// IP runs ip(8) with args in the caller's namespace.
func IP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// IPIn runs ip(8) with args in namespace ns (ip -n ns ...).
func IPIn(ns string, args ...string) error {
	return IP(append([]string{"-n", ns}, args...)...)
}

// Sysctl sets each setting ("name=value") in namespace ns.
func Sysctl(ns string, settings ...string) error {
	for _, s := range settings {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", s).CombinedOutput(); err != nil {
			return fmt.Errorf("sysctl %s in %s: %w: %s", s, ns, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Create makes the lab named lab: a blackhole route for each of its
// prefixes in the caller's namespace (should anything there send to a
// lab address, it is dropped here instead of leaving the machine), then
// each namespace with its loopback up. A namespace that exists already
// is an error: another lab of that name.
func Create(lab string, prefixes, namespaces []string) error {
	for _, p := range prefixes {
		if err := IP("route", "add", "blackhole", p); err != nil {
			return fmt.Errorf("guard route for %s (another lab on this net?): %w", p, err)
		}
	}
	for _, ns := range namespaces {
		if err := IP("netns", "add", ns); err != nil {
			return fmt.Errorf("lab %s exists already? %w", lab, err)
		}
		if err := IPIn(ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	return nil
}

// Destroy undoes Create: it removes the guard routes, then kills what
// runs in each namespace (with kill's signal sig, e.g. "TERM"; never
// this process) and removes the namespace. Namespaces that do not exist
// are skipped; it reports those it could not remove.
func Destroy(prefixes, namespaces []string, sig string) error {
	for _, p := range prefixes {
		_ = IP("route", "del", "blackhole", p)
	}
	self := strconv.Itoa(os.Getpid())
	var errs []error
	for _, ns := range namespaces {
		out, err := exec.Command("ip", "netns", "pids", ns).Output()
		if err != nil {
			continue // no such namespace
		}
		for _, pid := range strings.Fields(string(out)) {
			if pid != self {
				_ = exec.Command("kill", "-s", sig, pid).Run()
			}
		}
		if err := IP("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
