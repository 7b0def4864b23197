// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"fmt"
	"os/exec"
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
