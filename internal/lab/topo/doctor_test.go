// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
)

// TestStatusAndDoctor runs xlb status and xlb doctor in the balancer's
// namespace against a running daemon: a healthy lab has no warning and
// no problem; a service without a local IP, a real whose neighbour never
// answers and a veth peer with GRO off are each named, with the command
// that fixes it, and doctor exits 1. Without a daemon, doctor reads the
// file.
func TestStatusAndDoctor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, d := startLab(t, ctx, 2, "rr")
	cfgPath, sock, _ := topo.DaemonFiles()
	run := func(args ...string) (string, int) {
		t.Helper()
		args = append(args, "--socket", sock)
		out, err := topo.Exec(topo.LB(), xlbBinary, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("xlb %s: %v", strings.Join(args, " "), err)
		}
		return string(out), 0
	}
	expect := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}

	out, code := run("status")
	expect(out, "Daemon:", "running, xlb ", "Interfaces:", "l0 (native), l1 (native), l2 (native)",
		"Services:", "3 (2 tcp, 1 udp)", "Reals:", "6: 6 up, 0 down, 0 unresolved, 0 drained", "Warnings:", "none")
	if code != 0 {
		t.Errorf("status exited %d", code)
	}
	out, code = run("doctor")
	expect(out, "OK       sysctl net.ipv4.ip_forward", "OK       interface l1 XDP: l1 runs program", "in native mode",
		"OK       next hops", "0 problems")
	if code != 0 {
		t.Errorf("doctor on a healthy lab exited %d:\n%s", code, out)
	}

	// three things wrong
	client := d.Client()
	one := 1
	dead := topo.addr(11, 9)
	if _, err := client.Change(ctx, http.MethodPost, "/v1/services", config.Service{VIP: topo.VIP().String(), Port: 81, Protocol: "tcp"}); err != nil {
		t.Fatal(err)
	}
	svcPath := fmt.Sprintf("/v1/services/tcp/%s/%d", topo.VIP(), ServicePort)
	if _, err := client.Change(ctx, http.MethodPost, svcPath+"/reals", config.Real{Address: dead.String(), Port: ServicePort, Weight: &one}); err != nil {
		t.Fatal(err)
	}
	if out, err := topo.Exec(topo.Real(2), "ethtool", "-K", "r0", "gro", "off").CombinedOutput(); err != nil {
		t.Fatalf("ethtool: %v: %s", err, out)
	}
	out, code = run("status")
	expect(out, "Reals:", "7: 6 up, 0 down, 1 unresolved", "Warnings:",
		fmt.Sprintf("service tcp %s:81 has no local IP", topo.VIP()), fmt.Sprintf("real %s:%d of tcp %s:%d is unresolved: next hop %s dev l1", dead, ServicePort, topo.VIP(), ServicePort, dead))
	out, code = run("doctor")
	expect(out, fmt.Sprintf("PROBLEM  local IPs of tcp %s:81", topo.VIP()), "fix: xlb laddr add -t",
		fmt.Sprintf("PROBLEM  next hop of %s", dead), "PROBLEM  interface l2 veth peer: veth l2: its peer r0", "gro on")
	if code != 1 {
		t.Errorf("doctor with problems exited %d, want 1", code)
	}

	// no daemon: the file
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	out, code = run("doctor", "--config", cfgPath)
	expect(out, "WARNING  daemon: no daemon answers", "OK       interface l0 XDP: no XDP program on l0 (no daemon runs)")
	if code != 1 { // the veth peer still has GRO off
		t.Errorf("doctor without a daemon exited %d, want 1 (the peer's GRO):\n%s", code, out)
	}
}
