// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// AppResult is one application measurement through one DUT.
type AppResult struct {
	Scenario    string  `json:"scenario"` // latency, redis, http, throughput
	Test        string  `json:"test"`     // e.g. "TCP_RR", "redis GET -d 1400 -P 50", "iperf3 MTU 1500"
	DUT         string  `json:"dut"`
	Mode        string  `json:"mode,omitempty"`    // the DUT's XDP mode, native or generic (throughput)
	Streams     int     `json:"streams,omitempty"` // TCP connections at once (throughput)
	MTU         int     `json:"mtu,omitempty"`     // of every lab link (throughput)
	Rate        float64 `json:"rate"`              // in Unit
	Unit        string  `json:"unit"`              // "trans/s", "req/s", "Mbps"
	MeanUs      float64 `json:"mean_us,omitempty"`
	P50Us       float64 `json:"p50_us,omitempty"`
	P90Us       float64 `json:"p90_us,omitempty"`
	P95Us       float64 `json:"p95_us,omitempty"` // redis-benchmark gives p95, not p90
	P99Us       float64 `json:"p99_us,omitempty"`
	MaxUs       float64 `json:"max_us,omitempty"`
	Retransmits uint64  `json:"retransmits,omitempty"`
	// PayloadSize is the body's bytes of a size sweep's test (http,
	// WARP17's charts)
	PayloadSize int `json:"payload_size,omitempty"`
	// Links are the DUT's and the client's packet and bit rates during
	// the test, where it reads them (the size sweep)
	Links *bench.LinkRates `json:"links,omitempty"`
	// RetransmitsPerSec is Retransmits over the test's time, as the
	// Arion report gives them
	RetransmitsPerSec float64 `json:"retransmits_per_s,omitempty"`
	// RingDrops are the frames the lab's veth rings had no room for
	// during the test (bench.Env.RingDrops: into the DUT and out of it)
	RingDrops uint64    `json:"ring_drops,omitempty"`
	Errors    uint64    `json:"errors,omitempty"`
	CDFUs     []float64 `json:"cdf_us,omitempty"` // latency at percentiles 0,1,...,100 (101 values)
	Command   string    `json:"command"`          // the client command line, or what the Go client does
	Note      string    `json:"note,omitempty"`   // e.g. why a test could not run here
	// TrialRates are every trial's rate when a test ran more than once
	// (AppOptions.Trials); the result is the median trial's
	TrialRates []float64 `json:"trial_rates,omitempty"`
}

// AppOptions are the app scenarios' parameters.
type AppOptions struct {
	Duration time.Duration     // per test (CI smoke: about 1 s)
	Progress func(line string) // may be nil
	// Trials is how often each TCP_STREAM test runs; the median counts
	// (0 or 1: once)
	Trials int
	// RedisTests are redis-benchmark's tests (-t; default RedisTests)
	RedisTests []string
	// PayloadSizes are http's body sizes of the sweep with a connection
	// per request (WARP17's HTTP charts; none: no sweep)
	PayloadSizes []int
}

// AppScenarios are the scenarios RunApp runs.
var AppScenarios = []string{"latency", "redis", "http", "throughput"}

// The applications' fixed ports, distinct so that a server left over
// by one test never answers another.
const (
	appPortIperf    = 5201
	appPortRedis    = 6379
	appPortHTTP     = 8080
	appPortSockperf = 11111
	appPortRR       = 12865 // the Go TCP_RR, TCP_CRR and TCP_STREAM servers
)

// appPorts are the ports a DUT must forward for the app scenarios
// (haproxy binds these on the VIP).
var appPorts = []int{appPortIperf, appPortRedis, appPortHTTP, appPortSockperf, appPortRR}

// appRun is one RunApp call: where the servers run, the processes it
// started and the directory of their files.
type appRun struct {
	ctx    context.Context
	e      *bench.Env
	dut    bench.DUT
	o      AppOptions
	dir    string     // config, pid, log and output files
	target netip.Addr // where the client connects
	reals  []int      // the reals running servers
	procs  []*appProc
}

// RunApp runs scenario's real-application tests through dut, which the
// caller has set up (dut.Setup already called), and returns one result
// per test. The servers run in real 1 for a DUT that does not balance
// (direct), else in every real; the clients run in the client.
func RunApp(ctx context.Context, e *bench.Env, scenario string, dut bench.DUT, o AppOptions) (res []AppResult, err error) {
	if !slices.Contains(AppScenarios, scenario) {
		return nil, fmt.Errorf("app scenario %q: want one of %s", scenario, strings.Join(AppScenarios, ", "))
	}
	if o.Duration <= 0 {
		return nil, fmt.Errorf("app scenario %s: duration %v: want > 0", scenario, o.Duration)
	}
	if err := e.UseTCP(); err != nil {
		return nil, fmt.Errorf("prepare lab for %s: %w", scenario, err)
	}
	if err := dut.Alive(ctx, e); err != nil {
		return nil, fmt.Errorf("%s before %s: %w", dut.Name(), scenario, err)
	}
	r := &appRun{ctx: ctx, e: e, dut: dut, o: o, target: dut.Target(e, false, false), reals: []int{1}}
	if dut.Balances() {
		r.reals = nil
		for i := 1; i <= e.Topo.Reals; i++ {
			r.reals = append(r.reals, i)
		}
	}
	if r.dir, err = os.MkdirTemp("", "xlb-apps-*"); err != nil {
		return nil, fmt.Errorf("app scenario %s: %w", scenario, err)
	}
	// 0755: nginx's workers run as nobody
	if err := os.Chmod(r.dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, r.stopAll())
		_ = os.RemoveAll(r.dir)
	}()
	switch scenario {
	case "latency":
		res, err = r.latency()
	case "redis":
		res, err = r.redis()
	case "http":
		res, err = r.http()
	case "throughput":
		res, err = r.throughput()
	}
	for i := range res {
		res[i].Scenario, res[i].DUT = scenario, dut.Name()
	}
	return res, err
}

// progress reports a line, if anyone listens.
func (r *appRun) progress(format string, args ...any) {
	if r.o.Progress != nil {
		r.o.Progress(fmt.Sprintf("[%s] ", r.dut.Name()) + fmt.Sprintf(format, args...))
	}
}

// seconds is the test duration in whole seconds (the tools take no
// less), at least 1.
func (r *appRun) seconds() int { return max(1, int(math.Round(r.o.Duration.Seconds()))) }

// timeout bounds a client whose load lasts the test duration.
func (r *appRun) timeout() time.Duration {
	return time.Duration(r.seconds())*time.Second*3 + 20*time.Second
}

// appProc is a server started in a namespace; stop kills it.
type appProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when it has exited
	err  error         // its exit status, once done
}

// startServer starts a server in real i, with its output in a log file,
// and waits until it listens on TCP port.
func (r *appRun) startServer(i, port int, name string, args ...string) error {
	ns := r.e.Topo.Real(i)
	logName := filepath.Join(r.dir, fmt.Sprintf("%s-real%d.log", filepath.Base(name), i))
	f, err := os.Create(logName)
	if err != nil {
		return fmt.Errorf("start %s in %s: %w", name, ns, err)
	}
	defer f.Close()
	cmd := r.e.Topo.Exec(ns, name, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = f, f, r.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s in %s: %w", name, ns, err)
	}
	p := &appProc{name: name + " in " + ns, cmd: cmd, log: logName, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	r.procs = append(r.procs, p)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := listening(ns, port)
		switch {
		case err != nil:
			return fmt.Errorf("wait for %s: %w", p.name, err)
		case ok:
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it listened on port %d: %v: %s", p.name, port, p.err, tail(logName))
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen on port %d after 10 s: %s", p.name, port, tail(logName))
		}
	}
}

// startServers starts the same server in every real of the run.
func (r *appRun) startServers(port int, name string, args ...string) error {
	for _, i := range r.reals {
		if err := r.startServer(i, port, name, args...); err != nil {
			return err
		}
	}
	return nil
}

// stopAll ends every server the run started: SIGTERM to its process
// group, SIGKILL after 3 s, and waits for it.
func (r *appRun) stopAll() error {
	var errs []error
	for _, p := range r.procs {
		if err := p.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	r.procs = nil
	return errors.Join(errs...)
}

func (p *appProc) stop() error {
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
		return nil // gone already (its log says why)
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(3 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stop %s: still running after SIGKILL", p.name)
	}
}

// client runs a client command in the client namespace, bounded by the
// run's timeout, and returns its standard output.
func (r *appRun) client(name string, args ...string) (string, error) {
	return r.clientFor(r.timeout(), name, args...)
}

// clientFor is client with a timeout of its own.
func (r *appRun) clientFor(timeout time.Duration, name string, args ...string) (string, error) {
	ns := r.e.Topo.Client()
	var stdout, stderr bytes.Buffer
	cmd := r.e.Topo.Exec(ns, name, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = &stdout, &stderr, r.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s in %s: %w", name, ns, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-r.ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return "", r.ctx.Err()
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("killed after %v", timeout)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s in %s: %w: %s", commandLine(name, args), ns, err, lastLines(stderr.String()+stdout.String(), 5))
	}
	return stdout.String(), nil
}

// listening says whether a TCP socket listens on port in namespace ns.
func listening(ns string, port int) (bool, error) {
	found := false
	err := netns.Run(ns, func() error {
		for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if listensIn(string(b), port) {
				found = true
			}
		}
		return nil
	})
	return found, err
}

// listensIn says whether a /proc/net/tcp table has a socket in LISTEN
// state (0A) on port.
func listensIn(table string, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// fillLatency sets the latency figures of res from samples (µs): mean,
// p50, p90, p99, max and the CDF at every whole percentile. It sorts
// samples.
func fillLatency(res *AppResult, samples []float64) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	var sum float64
	for _, s := range samples {
		sum += s
	}
	res.MeanUs = sum / float64(len(samples))
	res.CDFUs = make([]float64, 101)
	for p := range res.CDFUs {
		res.CDFUs[p] = percentile(samples, float64(p))
	}
	res.P50Us, res.P90Us, res.P99Us = percentile(samples, 50), percentile(samples, 90), percentile(samples, 99)
	res.MaxUs = samples[len(samples)-1]
}

// percentile is the nearest-rank percentile p of sorted samples (p = 0
// is the least).
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// commandLine quotes a command for the results.
func commandLine(name string, args []string) string {
	q := []string{filepath.Base(name)}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"$") {
			a = strconv.Quote(a)
		}
		q = append(q, a)
	}
	return strings.Join(q, " ")
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// tail is the end of a log file, for errors.
func tail(file string) string {
	b, _ := os.ReadFile(file)
	return lastLines(string(b), 5)
}
