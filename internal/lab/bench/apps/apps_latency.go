// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// placement is where a latency test's client and servers run. On veth
// a packet is received on the CPU that sent it, so with one CPU the
// whole round trip (and the DUT's part) runs there and no wake-up of
// another CPU adds to it; with two, every round trip wakes the other
// CPU twice, as between two machines. Left to the scheduler, the
// figures of one DUT against another depended on where it put them.
type placement struct {
	name           string // in the test's name: "one CPU", "two CPUs"
	client, server int
}

// latencyPlacements are one CPU, then two if the process may use two.
func latencyPlacements() ([]placement, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("CPU mask: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < 2; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("no CPU in the process's mask")
	}
	p := []placement{{"one CPU", cpus[0], cpus[0]}}
	if len(cpus) > 1 {
		p = append(p, placement{"two CPUs", cpus[0], cpus[1]})
	}
	return p, nil
}

// where says it in a result's command.
func (p placement) where() string {
	return fmt.Sprintf("client on CPU %d, servers on CPU %d", p.client, p.server)
}

// latency runs the latency scenario: the Go TCP_RR and TCP_CRR, then
// sockperf ping-pong, each with the client and servers on one CPU, then
// on two.
func (r *appRun) latency() (res []AppResult, err error) {
	// TCP_CRR leaves a connection in TIME_WAIT per transaction on the
	// client: reuse them (after 1 s) and use every port, as netperf's
	// users do, instead of running out of ports.
	restore, err := nsSysctls(r.e, r.e.Topo.Client(), "net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, restore()) }()
	places, err := latencyPlacements()
	if err != nil {
		return nil, err
	}
	for _, p := range places {
		a, err := r.goRR(p)
		res = append(res, a...)
		if err != nil {
			return res, err
		}
	}
	for _, p := range places {
		a, err := r.sockperf(p)
		if err != nil {
			return res, err
		}
		res = append(res, a)
	}
	a, err := r.genericRR(places[len(places)-1])
	return append(res, a...), err
}

// genericRR runs the Go TCP_RR and TCP_CRR again with a DUT attached
// with XDP in generic mode (the Arion report's table has both modes),
// the senders' TSO and GSO off as the operator guide asks for it, then
// puts the DUT back in native mode. Other DUTs have no such run.
func (r *appRun) genericRR(p placement) (res []AppResult, err error) {
	ms, ok := bench.SwitchesMode(r.dut)
	if !ok {
		return nil, nil
	}
	mode := bench.XDPModes[1]
	r.progress("%s mode", mode)
	if err := ms.SetMode(r.ctx, r.e, mode); err != nil {
		return nil, fmt.Errorf("%s in %s mode: %w", r.dut.Name(), mode, err)
	}
	defer func() { err = errors.Join(err, ms.SetMode(r.ctx, r.e, bench.XDPModes[0])) }()
	if err := r.e.SenderOffloads(false); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.e.SenderOffloads(true)) }()
	res, err = r.goRR(p)
	for i := range res {
		res[i].Mode = mode
	}
	return res, err
}

// goRR runs the Go TCP_RR and TCP_CRR with placement p.
func (r *appRun) goRR(p placement) (res []AppResult, err error) {
	srv, err := startGoServer(r.e.Topo, r.reals, appPortRR, echoMode, p.server)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	dst := netip.AddrPortFrom(r.target, appPortRR)
	for _, crr := range []bool{false, true} {
		test, what := "TCP_RR", "one connection, a 1-byte request and a 1-byte response at a time"
		if crr {
			test, what = "TCP_CRR", "per transaction: connect, 1-byte request, 1-byte response, close"
		}
		test += ", " + p.name
		r.progress("%s to %s for %v", test, dst, r.o.Duration)
		st, err := runRR(r.ctx, r.e.Topo.Client(), dst, r.o.Duration, crr, p.client)
		if err != nil {
			return res, err
		}
		a := AppResult{Test: test, Unit: "trans/s", Errors: st.errors,
			Command: fmt.Sprintf("Go %s client to %s for %v: %s, TCP_NODELAY, blocking syscalls on a locked thread, %s", test, dst, r.o.Duration, what, p.where())}
		if st.elapsed > 0 {
			a.Rate = float64(st.n) / st.elapsed.Seconds()
		}
		fillLatency(&a, st.samples)
		// over every transaction, should the samples have been capped
		a.MeanUs, a.MaxUs = st.mean, st.max
		if a.CDFUs != nil {
			a.CDFUs[100] = st.max
		}
		r.progress("%s: %.0f trans/s, p50 %.1f µs, p99 %.1f µs", test, a.Rate, a.P50Us, a.P99Us)
		res = append(res, a)
	}
	return res, nil
}

// sockperf runs sockperf ping-pong over TCP with placement p (taskset),
// reporting round trips.
func (r *appRun) sockperf(p placement) (AppResult, error) {
	if err := r.startServers(appPortSockperf, "taskset", "-c", strconv.Itoa(p.server),
		"sockperf", "server", "-i", "0.0.0.0", "-p", strconv.Itoa(appPortSockperf), "--tcp"); err != nil {
		return AppResult{}, err
	}
	full := filepath.Join(r.dir, "sockperf-full.csv")
	args := []string{"-c", strconv.Itoa(p.client), "sockperf", "ping-pong", "-i", r.target.String(), "-p", strconv.Itoa(appPortSockperf), "--tcp",
		"-t", strconv.Itoa(r.seconds()), "--full-rtt", "--full-log", full}
	r.progress("sockperf ping-pong to %s for %d s, %s", r.target, r.seconds(), p.where())
	out, err := r.client("taskset", args...)
	if err != nil {
		return AppResult{}, err
	}
	a, err := parseSockperf(out)
	if err != nil {
		return AppResult{}, fmt.Errorf("sockperf ping-pong to %s: %w", r.target, err)
	}
	a.Test += ", " + p.name
	a.Command = commandLine("taskset", args) + " (servers: taskset -c " + strconv.Itoa(p.server) + ")"
	f, err := os.Open(full)
	if err != nil {
		return AppResult{}, fmt.Errorf("sockperf full log: %w", err)
	}
	defer f.Close()
	samples, err := parseSockperfFullLog(f)
	if err != nil {
		return AppResult{}, fmt.Errorf("sockperf full log %s: %w", full, err)
	}
	var cdf AppResult
	fillLatency(&cdf, samples)
	a.CDFUs = cdf.CDFUs
	r.progress("%s: %.0f trans/s, p50 %.1f µs, p99 %.1f µs", a.Test, a.Rate, a.P50Us, a.P99Us)
	return a, r.stopAll()
}

// ansi matches the colour escapes sockperf writes even to a pipe.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// sockperfValid is the line of the measured part of the run (without
// the warm-up).
var sockperfValid = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)

// parseSockperf reads the summary of `sockperf ping-pong --full-rtt`:
// the rate (round trips per second of the valid duration), avg-rtt and
// the percentiles, in µs.
func parseSockperf(out string) (AppResult, error) {
	a := AppResult{Test: "sockperf ping-pong", Unit: "trans/s"}
	out = ansi.ReplaceAllString(out, "")
	m := sockperfValid.FindStringSubmatch(out)
	if m == nil {
		return a, fmt.Errorf("no [Valid Duration] line in: %s", lastLines(out, 5))
	}
	secs, _ := strconv.ParseFloat(m[1], 64)
	recv, _ := strconv.ParseFloat(m[3], 64)
	if secs <= 0 || recv == 0 {
		return a, fmt.Errorf("no round trips: %s", m[0])
	}
	a.Rate = recv / secs
	if sent, _ := strconv.ParseFloat(m[2], 64); sent > recv {
		a.Errors = uint64(sent - recv)
	}
	found := 0
	for _, line := range strings.Split(out, "\n") {
		if _, v, ok := strings.Cut(line, "avg-rtt="); ok {
			v, _, _ = strings.Cut(v, " ")
			a.MeanUs, _ = strconv.ParseFloat(v, 64)
			found++
			continue
		}
		k, v, ok := strings.Cut(line, "---> ")
		if !ok {
			continue
		}
		k, v, ok = strings.Cut(v, "=")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return a, fmt.Errorf("sockperf line %q: %w", line, err)
		}
		switch strings.TrimSpace(k) {
		case "<MAX> observation":
			a.MaxUs = x
		case "percentile 99.000":
			a.P99Us = x
		case "percentile 90.000":
			a.P90Us = x
		case "percentile 50.000":
			a.P50Us = x
		default:
			continue
		}
		found++
	}
	if found != 5 {
		return a, fmt.Errorf("avg-rtt, percentiles 50, 90, 99 or <MAX> missing (run with --full-rtt?) in: %s", lastLines(out, 12))
	}
	return a, nil
}

// parseSockperfFullLog reads the round trips (µs) of a sockperf
// --full-log file: the summary, a line of dashes, the CSV "packet,
// txTime(sec), rxTime(sec), rtt(usec)", a line of dashes.
func parseSockperfFullLog(rd io.Reader) ([]float64, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	_, body, ok := strings.Cut(string(b), "packet, txTime(sec), rxTime(sec), rtt(usec)\n")
	if !ok {
		return nil, fmt.Errorf("no CSV header")
	}
	cr := csv.NewReader(strings.NewReader(body))
	cr.FieldsPerRecord, cr.TrimLeadingSpace = -1, true
	var out []float64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) != 4 {
			continue // the closing dashes
		}
		us, err := strconv.ParseFloat(rec[3], 64)
		if err != nil {
			return nil, fmt.Errorf("round trip %q: %w", rec[3], err)
		}
		out = append(out, us)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no round trips")
	}
	return out, nil
}

// nsSysctls sets sysctls in namespace ns and returns what puts the old
// values back.
func nsSysctls(e *bench.Env, ns string, settings ...string) (restore func() error, err error) {
	var old []string
	restore = func() error {
		var errs []error
		for _, s := range old {
			if _, err := e.RunIn(ns, "sysctl", "-qw", s); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, s := range settings {
		k, _, _ := strings.Cut(s, "=")
		v, err := e.RunIn(ns, "sysctl", "-n", k)
		if err != nil {
			return nil, errors.Join(err, restore())
		}
		if _, err := e.RunIn(ns, "sysctl", "-qw", s); err != nil {
			return nil, errors.Join(err, restore())
		}
		old = append(old, k+"="+strings.Join(strings.Fields(v), " "))
	}
	return restore, nil
}
