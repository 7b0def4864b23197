// SPDX-License-Identifier: Apache-2.0

package neigh

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Runner runs ip(8) with args and returns its standard output. An error
// should carry the command's standard error in its text: the Manager reads
// it to tell a kernel without managed entries from other failures.
type Runner func(ctx context.Context, args ...string) ([]byte, error)

// ipError is a failed ip command with what it wrote to standard error.
type ipError struct {
	args   []string
	stderr string
	err    error
}

func (e *ipError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

func (e *ipError) Unwrap() error { return e.err }

// execRunner runs the command line prefix (e.g. ["ip"] or
// ["ip", "-n", "ns"]) followed by the arguments.
func execRunner(prefix []string) Runner {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		argv := append(append([]string{}, prefix[1:]...), args...)
		cmd := exec.CommandContext(ctx, prefix[0], argv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, &ipError{args: append([]string{prefix[0]}, argv...), stderr: strings.TrimSpace(stderr.String()), err: err}
		}
		return out, nil
	}
}

// family is the ip option that selects addr's family.
func family(a netip.Addr) string {
	if a.Is4() {
		return "-4"
	}
	return "-6"
}

// routeGet asks the kernel for the next hop toward dst.
func (m *Manager) routeGet(ctx context.Context, dst netip.Addr) (Hop, bool, error) {
	out, err := m.run(ctx, "-j", "route", "get", dst.String())
	if err != nil {
		return Hop{}, false, fmt.Errorf("route to %s: %w", dst, err)
	}
	return parseRouteGet(out)
}

// gateways lists the gateways of the routes out of dev, both families.
func (m *Manager) gateways(ctx context.Context, dev string) ([]Hop, error) {
	var hops []Hop
	for _, fam := range []string{"-4", "-6"} {
		out, err := m.run(ctx, "-j", fam, "route", "show", "dev", dev)
		if err != nil {
			return nil, fmt.Errorf("routes out of %s: %w", dev, err)
		}
		h, err := parseGateways(out, dev)
		if err != nil {
			return nil, err
		}
		hops = append(hops, h...)
	}
	return hops, nil
}

// table reads every neighbour entry of the host, NOARP ones included
// (`nud all`: they are hidden otherwise).
func (m *Manager) table(ctx context.Context) (map[Hop]entry, error) {
	out, err := m.run(ctx, "-j", "neigh", "show", "nud", "all")
	if err != nil {
		return nil, fmt.Errorf("list neighbours: %w", err)
	}
	entries, err := parseNeigh(out, "")
	if err != nil {
		return nil, err
	}
	t := make(map[Hop]entry, len(entries))
	for _, e := range entries {
		t[e.Hop] = e
	}
	return t, nil
}

// show reads the entry for h, if there is one.
func (m *Manager) show(ctx context.Context, h Hop) (entry, bool, error) {
	out, err := m.run(ctx, "-j", family(h.Addr), "neigh", "show", "to", h.Addr.String(), "dev", h.Dev, "nud", "all")
	if err != nil {
		return entry{}, false, fmt.Errorf("neighbour %s: %w", h, err)
	}
	entries, err := parseNeigh(out, h.Dev)
	if err != nil {
		return entry{}, false, err
	}
	for _, e := range entries {
		if e.Hop == h {
			return e, true, nil
		}
	}
	return entry{}, false, nil
}

// replace adds or replaces the entry for h with flags (e.g. "managed",
// "extern_learn") and no link-layer address: the kernel resolves it.
func (m *Manager) replace(ctx context.Context, h Hop, flags []string) error {
	args := append([]string{"neigh", "replace", h.Addr.String(), "dev", h.Dev}, flags...)
	if _, err := m.run(ctx, args...); err != nil {
		return fmt.Errorf("add neighbour %s: %w", h, err)
	}
	return nil
}

// del deletes the entry for h; an entry already gone is not an error.
func (m *Manager) del(ctx context.Context, h Hop) error {
	_, err := m.run(ctx, "neigh", "del", h.Addr.String(), "dev", h.Dev)
	if err != nil && !strings.Contains(err.Error(), "No such file or directory") {
		return fmt.Errorf("delete neighbour %s: %w", h, err)
	}
	return nil
}

// links reads interface names by index.
func (m *Manager) links(ctx context.Context) (map[int]string, error) {
	out, err := m.run(ctx, "-j", "link", "show")
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	return parseLinks(out)
}

// unsupportedMarks are what a failed `ip neigh replace ... managed` says
// when the kernel (before 5.16) or ip(8) does not know managed entries,
// or when the kernel dropped the flag and took the request for a
// PERMANENT entry without an address.
var unsupportedMarks = []string{
	"Invalid argument",
	"invalid argument",
	"Invalid NTF_* flag combination",
	"is a garbage",
	"nknown",
	"not supported",
	"No link layer address given",
}

// unsupported reports whether err says that managed entries are unknown
// here rather than that this one entry could not be added.
func unsupported(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	for _, mark := range unsupportedMarks {
		if strings.Contains(s, mark) {
			return true
		}
	}
	return false
}
